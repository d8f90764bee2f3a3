package allocator

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

type deleteCall struct {
	IDs         []executorid.ID
	OnlyPending bool
}

// fakePods records calls. Creates wait on gate when it is set, and return
// err(id) when err is set.
type fakePods struct {
	mu          sync.Mutex
	created     []executorid.ID
	deleted     []deleteCall
	inflight    int
	maxInflight int
	gate        chan struct{}
	err         func(id executorid.ID) error
}

func (f *fakePods) CreateExecutorPod(ctx context.Context, id executorid.ID) error {
	f.mu.Lock()
	f.created = append(f.created, id)
	f.inflight++
	f.maxInflight = max(f.maxInflight, f.inflight)
	gate, errf := f.gate, f.err
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	if errf != nil {
		if err := errf(id); err != nil {
			return err
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (f *fakePods) DeleteExecutorPods(_ context.Context, ids []executorid.ID, onlyPending bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, deleteCall{slices.Clone(ids), onlyPending})
	return nil
}

func (f *fakePods) snapshot() (created []executorid.ID, deleted []deleteCall, inflight, maxInflight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	created = slices.Clone(f.created)
	slices.Sort(created)
	return created, slices.Clone(f.deleted), f.inflight, f.maxInflight
}

// loop runs an Allocator in a synctest bubble on a fake clock.
type loop struct {
	t      *testing.T
	clk    *clocktesting.FakeClock
	pods   *fakePods
	a      *Allocator
	cancel context.CancelFunc
	done   chan error
}

func startLoop(t *testing.T, o Options, pods *fakePods) *loop { return startLoopWith(t, o, pods, nil) }

// startLoopWith is startLoop with the allocator publishing to bus.
func startLoopWith(t *testing.T, o Options, pods *fakePods, bus *events.Bus) *loop {
	clk := clocktesting.NewFakeClock(t0)
	a := New(o, pods, clk, nil)
	a.PublishTo(bus)
	ctx, cancel := context.WithCancel(t.Context())
	l := &loop{t: t, clk: clk, pods: pods, a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { l.done <- a.Run(ctx) }()
	synctest.Wait()
	return l
}

func (l *loop) step(d time.Duration) {
	l.clk.Step(d)
	synctest.Wait()
}

func (l *loop) snap(pods ...snapshot.ExecutorPod) { l.snapTouched(nil, pods...) }

// snapTouched hands the loop a snapshot and the executors whose pods
// changed since the previous one.
func (l *loop) snapTouched(touched []executorid.ID, pods ...snapshot.ExecutorPod) {
	s := snapshot.Snapshot{Pods: map[executorid.ID]snapshot.ExecutorPod{}, Time: l.clk.Now()}
	for _, p := range pods {
		s.Pods[p.ID] = p
	}
	m := map[executorid.ID]bool{}
	for _, id := range touched {
		m[id] = true
	}
	l.a.OnSnapshot(s, m)
	synctest.Wait()
}

func (l *loop) created() []executorid.ID {
	c, _, _, _ := l.pods.snapshot()
	return c
}

func (l *loop) stop() error {
	l.cancel()
	synctest.Wait()
	select {
	case err := <-l.done:
		return err
	default:
		l.t.Fatal("Run did not return after its context ended")
		return nil
	}
}

func pendingPods(from, to executorid.ID) []snapshot.ExecutorPod {
	var out []snapshot.ExecutorPod
	for id := from; id <= to; id++ {
		out = append(out, execPod(id, snapshot.Pending))
	}
	return out
}

func TestLoopRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := startLoop(t, sparkOptions(2), &fakePods{})
		l.a.SetTarget(4)
		synctest.Wait()
		if got := l.created(); len(got) != 0 {
			t.Fatalf("created %v before the first snapshot", got)
		}
		l.snap()
		if diff := cmp.Diff(ids(1, 2), l.created()); diff != "" {
			t.Fatalf("first round (-want +got):\n%s", diff)
		}
		l.snap(pendingPods(1, 2)...)
		l.step(999 * time.Millisecond)
		if diff := cmp.Diff(ids(1, 2), l.created()); diff != "" {
			t.Fatalf("a wake-up within the batch delay ran a round (-want +got):\n%s", diff)
		}
		l.step(time.Millisecond)
		if diff := cmp.Diff(ids(1, 4), l.created()); diff != "" {
			t.Fatalf("second round (-want +got):\n%s", diff)
		}
		// 3 and 4 show up and vanish before the next round: the loop still
		// counts them as seen, so the round is not blocked on them.
		l.snap(pendingPods(1, 4)...)
		l.snap(pendingPods(1, 2)...)
		l.step(time.Second)
		if diff := cmp.Diff(ids(1, 6), l.created()); diff != "" {
			t.Fatalf("third round (-want +got):\n%s", diff)
		}
		// With nothing to wake it, the timer still runs rounds: the excess
		// unseen pod is deleted once older than the idle timeout.
		l.a.SetTarget(3)
		l.step(61 * time.Second)
		if _, deleted, _, _ := l.pods.snapshot(); !cmp.Equal(deleted, []deleteCall{{IDs: []executorid.ID{5}, OnlyPending: false}}) {
			t.Fatalf("deleted %v, want the excess unseen pod 5, in any phase (it may land after the delete)", deleted)
		}
		if err := l.stop(); err != nil {
			t.Errorf("Run() = %v, want nil after cancel", err)
		}
	})
}

// TestLoopFirstRoundOnTarget: the synced snapshot alone runs no round, so
// the first target is served at once, not after the least gap between
// rounds that a round on the zero target would have started.
func TestLoopFirstRoundOnTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := startLoop(t, adaptiveOptions(10, 10), &fakePods{})
		l.snap()
		l.step(10 * time.Millisecond)
		l.a.SetTarget(4)
		synctest.Wait()
		if diff := cmp.Diff(ids(1, 4), l.created()); diff != "" {
			t.Fatalf("first round on the target, with no clock step (-want +got):\n%s", diff)
		}
		if err := l.stop(); err != nil {
			t.Errorf("Run() = %v, want nil after cancel", err)
		}
	})
}

// TestLoopTouched: pods the source reports as changed meet their
// creation's expectation even when no snapshot ever contains them (they
// appeared and vanished in between), so a spark round is not blocked on
// them until PodCreationTimeout.
func TestLoopTouched(t *testing.T) {
	tests := map[string]struct {
		mark []executorid.ID
		want []executorid.ID
	}{
		"both marked: the next round runs":      {mark: ids(1, 2), want: ids(1, 4)},
		"one marked: the round waits for 2":     {mark: ids(1, 1), want: ids(1, 2)},
		"none marked: the round waits for both": {want: ids(1, 2)},
		"unknown ids are harmless":              {mark: []executorid.ID{1, 2, 99}, want: ids(1, 4)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := startLoop(t, sparkOptions(2), &fakePods{})
				l.a.SetTarget(4)
				l.snap()
				if diff := cmp.Diff(ids(1, 2), l.created()); diff != "" {
					t.Fatalf("first round (-want +got):\n%s", diff)
				}
				// The pods appear and vanish between two snapshots.
				l.snapTouched(tc.mark)
				l.step(time.Second)
				if diff := cmp.Diff(tc.want, l.created()); diff != "" {
					t.Errorf("created after the second round (-want +got):\n%s", diff)
				}
				if err := l.stop(); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

func TestLoopCreateConcurrency(t *testing.T) {
	tests := map[string]struct {
		o    Options
		want int
	}{
		"adaptive: bounded": {o: Options{BatchSize: 40, BatchDelay: time.Second, MaxPendingPods: 1000, CreateConcurrency: 16}, want: 16},
		"spark: serial":     {o: Options{Policy: PolicySpark, BatchSize: 40, BatchDelay: time.Second, CreateConcurrency: 16}, want: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pods := &fakePods{gate: make(chan struct{})}
				l := startLoop(t, tc.o, pods)
				l.a.SetTarget(40)
				l.snap()
				if _, _, inflight, _ := pods.snapshot(); inflight != tc.want {
					t.Errorf("%d creates in flight, want %d", inflight, tc.want)
				}
				close(pods.gate)
				synctest.Wait()
				created, _, _, maxInflight := pods.snapshot()
				if len(created) != 40 || maxInflight != tc.want {
					t.Errorf("created %d with up to %d in flight, want 40 with up to %d", len(created), maxInflight, tc.want)
				}
				if err := l.stop(); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

func TestLoopStopsCreatingAfterAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The refusal comes once all four creates are in flight and before
		// the others end, as a slow answer would: returned at once, it
		// could reach the loop before the loop started the others, which
		// it then rightly skips.
		refuse := make(chan struct{})
		pods := &fakePods{gate: make(chan struct{}), err: func(id executorid.ID) error {
			if id == 1 {
				<-refuse
				return errRefused
			}
			return nil
		}}
		var plans []Plan
		var mu sync.Mutex
		l := startLoop(t, Options{BatchSize: 20, BatchDelay: time.Second, MaxPendingPods: 1000, CreateConcurrency: 4}, pods)
		l.a.observe = func(p Plan) { mu.Lock(); plans = append(plans, p); mu.Unlock() }
		l.a.SetTarget(20)
		l.snap()
		close(refuse)
		synctest.Wait()
		close(pods.gate)
		synctest.Wait()
		if diff := cmp.Diff(ids(1, 4), l.created()); diff != "" {
			t.Errorf("attempted (-want +got):\n%s", diff)
		}
		l.snap(pendingPods(2, 4)...)
		l.step(time.Second)
		mu.Lock()
		defer mu.Unlock()
		if len(plans) != 2 || !slices.Equal(plans[1].Create, append([]executorid.ID{1}, ids(5, 13)...)) {
			t.Errorf("plans %+v: want a second round of 10 (halved): the refused id 1 again, then from id 5", plans)
		}
		if err := l.stop(); err != nil {
			t.Error(err)
		}
	})
}

func TestLoopFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pods := &fakePods{err: func(executorid.ID) error { return invalidPodErr() }}
		l := startLoop(t, Options{BatchSize: 5, BatchDelay: time.Second}, pods)
		l.a.SetTarget(5)
		l.snap()
		l.step(time.Second)
		select {
		case err := <-l.done:
			var fe *FatalError
			if !errors.As(err, &fe) || !apierrors.IsInvalid(err) {
				t.Errorf("Run() = %v, want a *FatalError wrapping the Invalid status", err)
			}
		default:
			t.Fatal("Run still runs after an invalid pod spec")
		}
		if got := l.created(); len(got) > 5 {
			t.Errorf("attempted %v, want one round at most", got)
		}
		l.cancel()
	})
}

func TestLoopDeletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pods := &fakePods{}
		o := Options{Policy: PolicySpark, BatchSize: 3, BatchDelay: time.Second,
			PodCreationTimeout: 10 * time.Second, ExecutorIdleTimeout: 5 * time.Second}
		bus := events.NewBus(nil, nil)
		var published []events.PodDeleted
		bus.Subscribe("test", 0, func(e events.Event) {
			if d, ok := e.(*events.PodDeleted); ok {
				d := *d
				d.Time = time.Time{}
				published = append(published, d)
			}
		})
		l := startLoopWith(t, o, pods, bus)
		l.a.SetTarget(3)
		l.snap()
		// 1 and 2 show up, 3 never does.
		l.snap(execPod(1, snapshot.Running), execPod(2, snapshot.Pending, createdAt(t0)))
		l.step(11 * time.Second)
		if !l.a.IsDeleted(3) || l.a.IsDeleted(2) {
			t.Errorf("IsDeleted(3), IsDeleted(2) = %v, %v; want true, false", l.a.IsDeleted(3), l.a.IsDeleted(2))
		}
		l.a.SetTarget(1)
		l.step(time.Second)
		_, deleted, _, _ := pods.snapshot()
		want := []deleteCall{{IDs: []executorid.ID{3}}, {IDs: []executorid.ID{2}, OnlyPending: true}}
		if diff := cmp.Diff(want, deleted); diff != "" {
			t.Errorf("deletes (-want +got):\n%s", diff)
		}
		if err := l.stop(); err != nil {
			t.Error(err)
		}
		bus.Close()
		wantEvents := []events.PodDeleted{{Executor: 3, Reason: events.DeleteLost}, {Executor: 2, Reason: events.DeleteExcess}}
		if diff := cmp.Diff(wantEvents, published); diff != "" {
			t.Errorf("PodDeleted events (-want +got):\n%s", diff)
		}
	})
}

func TestLoopInvalidOptions(t *testing.T) {
	a := New(Options{BatchDelay: time.Second}, &fakePods{}, clocktesting.NewFakeClock(t0), nil)
	if err := a.Run(t.Context()); err == nil {
		t.Error("Run() with batch size 0 = nil, want an error")
	}
}

// TestLoopBackoffEndsOnTime: a round woken during adaptive's back-off (a
// pod changed) does not push the retry a batch delay past the back-off's
// end: after an API server failed every create of a round, the next
// creates go when the back-off ends.
func TestLoopBackoffEndsOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refuse atomic.Bool
		refuse.Store(true)
		pods := &fakePods{err: func(executorid.ID) error {
			if refuse.Load() {
				return errRefused
			}
			return nil
		}}
		l := startLoop(t, adaptiveOptions(4, 100), pods)
		l.a.SetTarget(4)
		l.snap() // t=0: the creates are refused (the round stops at the first)
		synctest.Wait()
		n := len(l.created())
		if n == 0 {
			t.Fatal("the first round attempted no create")
		}
		l.step(time.Second) // t=1s: the failures seen, back off until 2s
		l.step(700 * time.Millisecond)
		l.snap() // t=1.7s: a wake-up within the back-off runs an empty round
		synctest.Wait()
		if got := len(l.created()); got != n {
			t.Fatalf("a round within the back-off attempted creates: %d in all, want %d", got, n)
		}
		refuse.Store(false)
		l.step(300 * time.Millisecond) // t=2s: the back-off ends
		if got := len(l.created()); got <= n {
			t.Errorf("no create when the back-off ended (%d attempted in all): the wake-up at 1.7s pushed the retry to 2.7s", got)
		}
		if err := l.stop(); err != nil {
			t.Error(err)
		}
	})
}
