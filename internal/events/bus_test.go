package events

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBusDeliversInOrderToEveryConsumer(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	b := NewBus(clocktesting.NewFakePassiveClock(now), nil)
	var mu sync.Mutex
	got := map[string][]int64{}
	for _, name := range []string{"ui", "log"} {
		b.Subscribe(name, 0, func(e Event) {
			mu.Lock()
			defer mu.Unlock()
			if e.header().Time != now {
				t.Errorf("%s: event time %v, want the bus clock's %v", name, e.header().Time, now)
			}
			got[name] = append(got[name], e.(*JobStart).JobID)
		})
	}
	for i := range int64(100) {
		b.Publish(&JobStart{JobID: i})
	}
	b.Close()
	var want []int64
	for i := range int64(100) {
		want = append(want, i)
	}
	if diff := cmp.Diff(map[string][]int64{"ui": want, "log": want}, got); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

func TestSlowConsumerDropsAndCountsWithoutBlocking(t *testing.T) {
	b := NewBus(nil, nil)
	release := make(chan struct{})
	var handled int
	slow := b.Subscribe("slow", 4, func(Event) { <-release; handled++ })
	fast := 0
	b.Subscribe("fast", 1000, func(Event) { fast++ })
	done := make(chan struct{})
	go func() {
		for range 100 {
			b.Publish(&AppEnd{})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on a slow consumer")
	}
	close(release)
	b.Close()
	if fast != 100 {
		t.Errorf("the fast consumer handled %d events, want 100", fast)
	}
	// At most the batch being handled when the publisher began (no more
	// than the queue then) and the queue get through.
	if handled > 8 || slow.Dropped() != int64(100-handled) {
		t.Errorf("slow consumer: handled %d, dropped %d; want ≤ 8 handled and the rest dropped", handled, slow.Dropped())
	}
}

// The shared queue holds what the slowest consumer has not taken, within
// its capacity: a consumer that stops taking loses its oldest events and
// keeps the newest, and the others are not held back.
func TestStalledConsumerKeepsTheNewestAndBoundsTheQueue(t *testing.T) {
	synctest.Test(t, testStalledConsumer)
}

func testStalledConsumer(t *testing.T) {
	b := NewBus(nil, nil)
	release := make(chan struct{})
	var stalled []int64
	started := make(chan struct{})
	b.Subscribe("stalled", 100, func(e Event) {
		if len(stalled) == 0 {
			close(started)
			<-release
		}
		stalled = append(stalled, e.(*JobStart).JobID)
	})
	var fast atomic.Int64
	b.Subscribe("fast", 200_000, func(Event) { fast.Add(1) })
	b.Publish(&JobStart{JobID: 0})
	<-started
	for i := range int64(100_000) {
		b.Publish(&JobStart{JobID: i + 1})
	}
	synctest.Wait() // the fast consumer took everything; the stalled one waits on release
	b.mu.Lock()
	n := len(b.queue)
	b.mu.Unlock()
	// The stalled consumer's 100, and what came since the last trim.
	if n > 2*1024+200 {
		t.Errorf("the queue holds %d events once the fast consumer caught up, with one stalled at capacity 100", n)
	}
	close(release)
	b.Close()
	if fast.Load() != 100_001 {
		t.Errorf("the fast consumer handled %d events, want all 100,001", fast.Load())
	}
	// The event it was handling, then the last 100.
	want := []int64{0}
	for i := range int64(100) {
		want = append(want, 100_001-100+i)
	}
	if diff := cmp.Diff(want, stalled); diff != "" {
		t.Errorf("stalled consumer's events (-want +got):\n%s", diff)
	}
}

func TestNilBusDropsEverything(t *testing.T) {
	var b *Bus
	b.Publish(&AppEnd{})
	if c := b.Consumers(); c != nil {
		t.Errorf("a nil bus has consumers %v", c)
	}
	b.Close()
}

func TestConsumersListsSubscribersUntilClose(t *testing.T) {
	b := NewBus(nil, nil)
	b.Subscribe("progress", 1, func(Event) {})
	b.Subscribe("metrics", 1, func(Event) {})
	var names []string
	for _, c := range b.Consumers() {
		names = append(names, c.Name())
	}
	if diff := cmp.Diff([]string{"progress", "metrics"}, names); diff != "" {
		t.Errorf("consumers (-want +got):\n%s", diff)
	}
	b.Close()
	if c := b.Consumers(); len(c) != 0 {
		t.Errorf("%d consumers after Close, want none", len(c))
	}
}

func TestPublishRacingCloseDoesNotPanic(t *testing.T) {
	for range 50 {
		b := NewBus(nil, nil)
		b.Subscribe("x", 1, func(Event) {})
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 100 {
				b.Publish(&AppEnd{})
			}
		})
		b.Close()
		wg.Wait()
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, e := range []Event{
		&AppStart{Header{at}, "app-1", "wc", "k8s://x", "alice", "cluster", map[string]string{"a": "b"}, "pod", ""},
		&TaskEnd{Header: Header{at}, TaskID: 7, StageID: 2, Executor: 3, State: TaskFailed, Reason: "boom",
			Duration: time.Second, Metrics: TaskMetrics{ShuffleWriteBytes: 10}},
		&AllocationRound{Header: Header{at}, Target: 5, Running: 2, Pending: 3, Created: 3, Latency: time.Millisecond},
		&PodDeleted{Header: Header{at}, Executor: 4, Pod: "app-exec-4", Reason: DeleteExcess, Err: "forbidden"},
		&ExecutorRemoved{Header: Header{at}, Executor: 4, Reason: "pod app-exec-4 was OOM-killed", ExitCode: 137, Cause: "oom_killed"},
		&AppEnd{Header: Header{at}},
	} {
		b, err := Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if diff := cmp.Diff(e, back); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", Name(e), diff)
		}
	}
	if _, err := Unmarshal([]byte(`{"Event":"FromTheFuture"}`)); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown event: err %v, want ErrUnknown", err)
	}
	for _, e := range []Event{&AppStart{}} {
		if Name(e) != "AppStart" {
			t.Errorf("Name = %q", Name(e))
		}
	}
}

// Events published in batches reach every consumer in order, a batch
// consumer takes them as they queued up, a stalled one keeps the newest
// and counts the rest, and events without a time share the batch's.
func TestPublishAllAndBatchConsumers(t *testing.T) {
	b := NewBus(nil, nil)
	var mu sync.Mutex
	var got []int64
	var batches int
	b.SubscribeBatches("batches", 0, time.Millisecond, func(evs []Event) {
		mu.Lock()
		defer mu.Unlock()
		batches++
		for _, e := range evs {
			got = append(got, e.(*JobStart).JobID)
		}
	})
	release, started := make(chan struct{}), make(chan struct{})
	var stalled []int64
	b.Subscribe("stalled", 10, func(e Event) {
		if len(stalled) == 0 {
			close(started)
			<-release
		}
		stalled = append(stalled, e.(*JobStart).JobID)
	})
	b.Publish(&JobStart{JobID: 0})
	<-started
	var want []int64
	next := int64(1)
	for size := range 30 { // 435 events in batches of 0 to 29
		var evs []Event
		for range size {
			evs = append(evs, &JobStart{JobID: next})
			next++
		}
		b.PublishAll(evs)
		if size > 1 && !TimeOf(evs[0]).Equal(TimeOf(evs[size-1])) {
			t.Errorf("a batch's events were stamped %v and %v", TimeOf(evs[0]), TimeOf(evs[size-1]))
		}
	}
	for i := range next {
		want = append(want, i)
	}
	consumers := b.Consumers()
	close(release)
	b.Close()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batch consumer's events (-want +got):\n%s", diff)
	}
	if batches >= len(want) {
		t.Errorf("%d batches for %d events: not batched", batches, len(want))
	}
	wantStalled := []int64{0}
	for i := next - 10; i < next; i++ {
		wantStalled = append(wantStalled, i)
	}
	if diff := cmp.Diff(wantStalled, stalled); diff != "" {
		t.Errorf("stalled consumer's events (-want +got):\n%s", diff)
	}
	if d := consumers[1].Dropped(); d != next-1-10 {
		t.Errorf("the stalled consumer dropped %d events, want %d", d, next-1-10)
	}
}

// A lingering consumer takes a stream published an event at a time in
// batches, and still gets every event, in order, by Close.
func TestLingeringConsumerTakesBatches(t *testing.T) { synctest.Test(t, testLingeringBatches) }

func testLingeringBatches(t *testing.T) {
	b := NewBus(nil, nil)
	var got []int64
	var batches int
	const linger = 5 * time.Millisecond
	b.SubscribeBatches("lingering", 0, linger, func(evs []Event) {
		batches++
		for _, e := range evs {
			got = append(got, e.(*JobStart).JobID)
		}
	})
	const n = 200
	start := time.Now()
	for i := range int64(n) {
		b.Publish(&JobStart{JobID: i})
		synctest.Wait()
		time.Sleep(100 * time.Microsecond) // synctest's clock: a publisher slower than the consumer
	}
	publishing := time.Since(start)
	b.Close()
	if len(got) != n {
		t.Fatalf("%d events handled, want %d", len(got), n)
	}
	for i, id := range got {
		if id != int64(i) {
			t.Fatalf("event %d is job %d", i, id)
		}
	}
	// Without the linger the consumer wakes for nearly every event; with
	// it, at most once a linger.
	if limit := int(publishing/linger) + 2; batches > limit {
		t.Errorf("%d batches for %d events published one at a time over %s; want at most %d", batches, n, publishing, limit)
	}
}

// TestLingeringConsumerWakesForAGatheredBatch: a lingering consumer takes
// what is queued once a quarter of its capacity is, without waiting out
// its linger, and a lone event once its linger is out.
func TestLingeringConsumerWakesForAGatheredBatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		linger time.Duration
		// publish events are published, the last after the consumer
		// waits for more.
		publish int
		want    int // handled before Close
	}{
		{name: "below the batch, linger not out", linger: time.Hour, publish: 9, want: 0},
		{name: "a gathered batch", linger: time.Hour, publish: 10, want: 10},
		{name: "a lone event, linger out", linger: 5 * time.Millisecond, publish: 1, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := NewBus(nil, nil)
				var handled atomic.Int64
				b.SubscribeBatches("lingering", 40, tc.linger, func(evs []Event) { handled.Add(int64(len(evs))) })
				for i := range int64(tc.publish) {
					if i == int64(tc.publish)-1 {
						synctest.Wait() // the consumer waits for more
					}
					b.Publish(&JobStart{JobID: i})
				}
				// synctest's clock: past the short linger, well within the long
				// one; Wait: nothing more is handled.
				time.Sleep(30 * time.Millisecond)
				synctest.Wait()
				if got := handled.Load(); got != int64(tc.want) {
					t.Errorf("%d events handled before Close, want %d", got, tc.want)
				}
				b.Close()
				if got := handled.Load(); got != int64(tc.publish) {
					t.Errorf("%d events handled after Close, want %d", got, tc.publish)
				}
			})
		})
	}
}

func TestApart(t *testing.T) {
	at := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	end := &TaskEnd{Header: Header{Time: at.Add(time.Second)}, TaskID: 7, StageID: 2, Partition: 3, Executor: 4,
		State: TaskSuccess, Launch: at}
	got := Apart(end)
	want := []Event{&TaskStart{Header: Header{Time: at}, TaskID: 7, StageID: 2, Partition: 3, Executor: 4},
		&TaskEnd{Header: Header{Time: at.Add(time.Second)}, TaskID: 7, StageID: 2, Partition: 3, Executor: 4, State: TaskSuccess}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Apart (-want +got):\n%s", diff)
	}
	if end.Launch != at {
		t.Error("Apart changed the event it was given")
	}
	if other := (&JobEnd{JobID: 1}); !cmp.Equal(Apart(other), []Event{other}) {
		t.Error("Apart changed another event")
	}
}

// TestAppStartAttemptJSON: an attempt's AppStart carries Spark's "App
// Attempt ID"; a driver that cannot restart writes none, as before.
func TestAppStartAttemptJSON(t *testing.T) {
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		e    *AppStart
		want string
	}{
		{"no attempts", &AppStart{Header: Header{at}, AppID: "app-1"},
			`{"Event":"AppStart","Time":"2026-11-24T12:00:00Z","AppID":"app-1","Name":"","Master":"","User":"","DeployMode":"","Conf":null,"DriverHost":""}`},
		{"attempt 2", &AppStart{Header: Header{at}, AppID: "app-1", AttemptID: "2"},
			`{"Event":"AppStart","Time":"2026-11-24T12:00:00Z","AppID":"app-1","Name":"","Master":"","User":"","DeployMode":"","Conf":null,"DriverHost":"","App Attempt ID":"2"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := AppendJSON(nil, tc.e)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("AppStart JSON (-want +got):\n%s", diff)
			}
			back, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(Event(tc.e), back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}
