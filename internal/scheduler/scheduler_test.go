package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

type fakeBackend struct {
	mu      sync.Mutex
	revives int
	kills   []int64
}

func (f *fakeBackend) ReviveOffers() { f.mu.Lock(); f.revives++; f.mu.Unlock() }
func (f *fakeBackend) KillTask(id int64, _ executorid.ID, _ string) {
	f.mu.Lock()
	f.kills = append(f.kills, id)
	f.mu.Unlock()
}

func newTestScheduler(maxFailures int) (*Scheduler, *fakeBackend) {
	b := &fakeBackend{}
	return onBackend(Options{MaxFailures: maxFailures, CPUsPerTask: 1}, b), b
}

// onBackend builds a scheduler that launches on b.
func onBackend(opts Options, b Backend) *Scheduler {
	s, err := New(opts, func(*Scheduler) (Backend, error) { return b, nil })
	if err != nil {
		panic(err)
	}
	return s
}

func specOf(n int, results map[int]string) TaskSetSpec {
	tasks := make([]TaskSpec, n)
	for i := range tasks {
		tasks[i] = TaskSpec{Partition: i}
	}
	return TaskSetSpec{JobID: 1, StageID: 1, Func: "f", Tasks: tasks, OnSuccess: func(p int, r []byte) {
		if results != nil {
			results[p] = string(r)
		}
	}}
}

type launched struct {
	Exec      executorid.ID
	Partition int
	Attempt   int
}

func summarize(ds []TaskDescription) []launched {
	var out []launched
	for _, d := range ds {
		out = append(out, launched{d.ExecutorID, d.Partition, d.Attempt})
	}
	return out
}

func TestResourceOffersSpreadsRoundRobin(t *testing.T) {
	tests := map[string]struct {
		tasks  int
		cpus   int
		offers []Offer
		want   []launched
	}{
		"one task per offer per pass": {
			tasks:  3,
			cpus:   1,
			offers: []Offer{{ExecutorID: 1, Cores: 2}, {ExecutorID: 2, Cores: 2}},
			want:   []launched{{1, 0, 0}, {2, 1, 0}, {1, 2, 0}},
		},
		"task.cpus larger than an offer": {
			tasks:  3,
			cpus:   2,
			offers: []Offer{{ExecutorID: 1, Cores: 1}, {ExecutorID: 2, Cores: 4}},
			want:   []launched{{2, 0, 0}, {2, 1, 0}},
		},
		"more cores than tasks": {
			tasks:  1,
			cpus:   1,
			offers: []Offer{{ExecutorID: 1, Cores: 8}},
			want:   []launched{{1, 0, 0}},
		},
		"no offers": {tasks: 2, cpus: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := onBackend(Options{MaxFailures: 4, CPUsPerTask: tc.cpus}, &fakeBackend{})
			s.Submit(specOf(tc.tasks, nil))
			got := summarize(s.ResourceOffers(tc.offers))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("launches (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTaskSetSucceedsWithResultsInPartitionOrder(t *testing.T) {
	s, _ := newTestScheduler(4)
	results := map[int]string{}
	ts := s.Submit(specOf(3, results))
	ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 3}})
	// Finish in reverse order.
	for i := len(ds) - 1; i >= 0; i-- {
		s.StatusUpdates([]Status{{TaskID: ds[i].TaskID, State: Finished, Result: []byte{byte('a' + ds[i].Partition)}}})
	}
	if err := ts.Err(); err != nil {
		t.Fatalf("task set failed: %v", err)
	}
	if diff := cmp.Diff(map[int]string{0: "a", 1: "b", 2: "c"}, results); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if n := s.RunningTasks(); n != 0 {
		t.Errorf("running tasks after success = %d, want 0", n)
	}
}

func TestRetriesUpToMaxFailuresKeepingTheReason(t *testing.T) {
	tests := map[string]struct {
		maxFailures int
		failures    int // failures of partition 0 before it succeeds
		wantErr     string
		wantTries   int
	}{
		"succeeds on the last allowed attempt": {maxFailures: 4, failures: 3, wantTries: 4},
		"fails after maxFailures":              {maxFailures: 4, failures: 4, wantErr: "task 0 in stage 1 failed 4 times", wantTries: 4},
		"maxFailures 1 fails at once":          {maxFailures: 1, failures: 1, wantErr: "failed 1 times", wantTries: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, _ := newTestScheduler(tc.maxFailures)
			ts := s.Submit(specOf(1, nil))
			tries := 0
			var attempts []int
			for {
				ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 1}})
				if len(ds) == 0 {
					break
				}
				tries++
				attempts = append(attempts, ds[0].Attempt)
				if tries <= tc.failures {
					s.StatusUpdates([]Status{{TaskID: ds[0].TaskID, State: Failed, Err: "bad record 42", Stack: "goroutine 1"}})
				} else {
					s.StatusUpdates([]Status{{TaskID: ds[0].TaskID, State: Finished}})
				}
			}
			if tries != tc.wantTries {
				t.Errorf("attempts launched = %d, want %d", tries, tc.wantTries)
			}
			for i, a := range attempts {
				if a != i {
					t.Errorf("attempt number of launch %d = %d, want %d", i, a, i)
				}
			}
			err := ts.Err()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "bad record 42") {
				t.Fatalf("error = %v, want it to contain %q and the task's reason", err, tc.wantErr)
			}
			var tfe *TaskFailedError
			if !errors.As(err, &tfe) || tfe.Stack != "goroutine 1" {
				t.Errorf("error %v is not a TaskFailedError with the stack", err)
			}
		})
	}
}

func TestExecutorLoss(t *testing.T) {
	tests := map[string]struct {
		causedByApp  bool
		wantAttempt  int
		wantFailures int
	}{
		"not caused by the application: resubmitted, not counted": {causedByApp: false, wantAttempt: 0},
		"caused by the application: counted as a failure":         {causedByApp: true, wantAttempt: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, b := newTestScheduler(2)
			ts := s.Submit(specOf(2, nil))
			first := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 1}, {ExecutorID: 2, Cores: 1}})
			if len(first) != 2 {
				t.Fatalf("launched %d tasks, want 2", len(first))
			}
			revives := b.revives
			s.ExecutorLost(1, LossReason{Message: "pod deleted", CausedByApp: tc.causedByApp})
			if b.revives == revives {
				t.Error("executor loss did not revive offers")
			}
			// A late status from the lost executor is ignored.
			s.StatusUpdates([]Status{{TaskID: first[0].TaskID, State: Finished, Result: []byte("stale")}})
			again := s.ResourceOffers([]Offer{{ExecutorID: 2, Cores: 1}, {ExecutorID: 3, Cores: 1}})
			want := []launched{{2, first[0].Partition, tc.wantAttempt}}
			if diff := cmp.Diff(want, summarize(again)); diff != "" {
				t.Fatalf("relaunch (-want +got):\n%s", diff)
			}
			s.StatusUpdates([]Status{{TaskID: first[1].TaskID, State: Finished}, {TaskID: again[0].TaskID, State: Finished}})
			if err := ts.Err(); err != nil {
				t.Fatalf("task set failed: %v", err)
			}
		})
	}
}

func TestLossCausedByAppExhaustsAttempts(t *testing.T) {
	s, _ := newTestScheduler(2)
	ts := s.Submit(specOf(1, nil))
	for i := range 2 {
		ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 1}})
		if len(ds) != 1 {
			t.Fatalf("round %d: launched %d", i, len(ds))
		}
		s.ExecutorLost(1, LossReason{Message: "executor process exited", ExitCode: 3, CausedByApp: true})
	}
	err := ts.Err()
	if err == nil || !strings.Contains(err.Error(), "exit code 3") {
		t.Fatalf("error = %v, want the executor's exit reason", err)
	}
}

func TestCancelKillsRunningTasks(t *testing.T) {
	s, b := newTestScheduler(4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, specOf(3, nil)) }()
	var ds []TaskDescription
	for len(ds) == 0 {
		ds = s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 2}})
	}
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "job cancelled") {
		t.Fatalf("error = %v, want job cancelled", err)
	}
	b.mu.Lock()
	kills := len(b.kills)
	b.mu.Unlock()
	if kills != 2 {
		t.Errorf("killed %d tasks, want the 2 running", kills)
	}
	if got := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 2}}); len(got) != 0 {
		t.Errorf("cancelled task set still launches %d tasks", len(got))
	}
}

func TestKilledByExecutorIsRequeuedWithoutFailure(t *testing.T) {
	s, _ := newTestScheduler(1)
	ts := s.Submit(specOf(1, nil))
	ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 1}})
	s.StatusUpdates([]Status{{TaskID: ds[0].TaskID, State: Killed, Err: "executor is decommissioning"}})
	again := s.ResourceOffers([]Offer{{ExecutorID: 2, Cores: 1}})
	if diff := cmp.Diff([]launched{{2, 0, 0}}, summarize(again)); diff != "" {
		t.Fatalf("relaunch (-want +got):\n%s", diff)
	}
	s.StatusUpdates([]Status{{TaskID: again[0].TaskID, State: Finished}})
	if err := ts.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestMaxResultSizeAbortsTheTaskSet(t *testing.T) {
	s := onBackend(Options{MaxFailures: 4, MaxResultSize: 10}, &fakeBackend{})
	ts := s.Submit(specOf(2, nil))
	ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 2}})
	s.StatusUpdates([]Status{{TaskID: ds[0].TaskID, State: Finished, Result: make([]byte, 6)}, {TaskID: ds[1].TaskID, State: Finished, Result: make([]byte, 6)}})
	if err := ts.Err(); err == nil || !strings.Contains(err.Error(), "spark.driver.maxResultSize") {
		t.Fatalf("error = %v, want maxResultSize", err)
	}
}

func TestFIFOAcrossTaskSets(t *testing.T) {
	s, _ := newTestScheduler(4)
	a := specOf(1, nil)
	a.StageID = 1
	b := specOf(1, nil)
	b.StageID = 2
	s.Submit(a)
	s.Submit(b)
	ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 1}})
	if len(ds) != 1 || ds[0].StageID != 1 {
		t.Fatalf("first launch = %+v, want stage 1 first", ds)
	}
	if n := s.PendingTasks(); n != 1 {
		t.Errorf("pending = %d, want 1", n)
	}
}

// TestCanFetchResult: a kept result is checked by its declared size before
// it is fetched, counting the results already being fetched, so parallel
// fetches cannot overshoot spark.driver.maxResultSize together; a result
// that arrived or failed frees its reservation.
func TestCanFetchResult(t *testing.T) {
	testCases := map[string]struct {
		max       int64
		declared  []int64 // asked in turn, each for the next task
		failFirst bool    // the first fetch fails before the others ask
		want      []bool
		aborted   bool
	}{
		"unlimited":             {max: 0, declared: []int64{1 << 40, 1 << 40}, want: []bool{true, true}},
		"fits":                  {max: 100, declared: []int64{40, 60}, want: []bool{true, true}},
		"one alone is too big":  {max: 100, declared: []int64{101}, want: []bool{false}, aborted: true},
		"together too big":      {max: 100, declared: []int64{60, 60}, want: []bool{true, false}, aborted: true},
		"freed by a failure":    {max: 100, declared: []int64{60, 60}, failFirst: true, want: []bool{true, true}},
		"the limit itself fits": {max: 100, declared: []int64{50, 50}, want: []bool{true, true}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			s := onBackend(Options{MaxFailures: 4, MaxResultSize: tc.max}, &fakeBackend{})
			ts := s.Submit(specOf(len(tc.declared), nil))
			ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: len(tc.declared)}})
			var got []bool
			for i, size := range tc.declared {
				got = append(got, s.CanFetchResult(ds[i].TaskID, size))
				if i == 0 && tc.failFirst {
					s.StatusUpdates([]Status{{TaskID: ds[0].TaskID, State: Failed, Err: "fetch failed"}})
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CanFetchResult (-want +got):\n%s", diff)
			}
			var err error
			select {
			case <-ts.Done():
				err = ts.Err()
			default: // still running: not aborted
			}
			if aborted := err != nil; aborted != tc.aborted {
				t.Fatalf("aborted = %v (%v), want %v", aborted, err, tc.aborted)
			}
			if tc.aborted && !strings.Contains(err.Error(), "spark.driver.maxResultSize") {
				t.Errorf("error %v does not name spark.driver.maxResultSize", err)
			}
		})
	}
}

// TestTaskOverMaxSizeFailsAtOnce: a task larger than
// spark.rpc.message.maxSize fails its task set at submission, naming the
// key and the task's size; nothing is launched.
func TestTaskOverMaxSizeFailsAtOnce(t *testing.T) {
	b := &fakeBackend{}
	s := onBackend(Options{MaxFailures: 4, MaxTaskSize: 100}, b)
	spec := specOf(2, nil)
	spec.Tasks[1].Payload = make([]byte, 101)
	ts := s.Submit(spec)
	select {
	case <-ts.Done():
	default:
		t.Fatal("the task set is still running")
	}
	if err := ts.Err(); err == nil || !strings.Contains(err.Error(), "101 bytes") || !strings.Contains(err.Error(), "spark.rpc.message.maxSize") {
		t.Errorf("error %v, want the size and spark.rpc.message.maxSize named", err)
	}
	if ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 2}}); len(ds) != 0 {
		t.Errorf("%d tasks launched", len(ds))
	}

	// Each fits alone, but a task goes to an executor with its stage's
	// plan, and the two would not fit one message.
	spec = specOf(2, nil)
	spec.Plan = make([]byte, 60)
	spec.Tasks[1].Payload = make([]byte, 60)
	ts = s.Submit(spec)
	select {
	case <-ts.Done():
	default:
		t.Fatal("a task set whose plan and task together are over the limit is still running")
	}
	if err := ts.Err(); err == nil || !strings.Contains(err.Error(), "partition 1 is 60 bytes serialized, and with its stage's plan (60 bytes)") {
		t.Errorf("plan and task over the limit together: error %v", err)
	}
	if ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 2}}); len(ds) != 0 {
		t.Errorf("%d tasks launched", len(ds))
	}
}

// QueueAhead asks for the floor until the next tasks' set has finished a
// task, then for queueWindow's worth of its measured tasks, within bounds.
func TestQueueAhead(t *testing.T) {
	for name, tc := range map[string]struct {
		durations []time.Duration // of the first set's successful tasks
		want      int
	}{
		"not measured yet":          {nil, 2},
		"microsecond tasks":         {[]time.Duration{time.Microsecond, time.Microsecond}, 64},
		"100 µs tasks":              {[]time.Duration{100 * time.Microsecond}, 20},
		"second-long tasks":         {[]time.Duration{time.Second}, 2},
		"shorter than a µs":         {[]time.Duration{0}, 64},
		"one odd slow task":         {[]time.Duration{100 * time.Microsecond, 100 * time.Millisecond}, 2},
		"150 fast after a slow one": {append([]time.Duration{100 * time.Millisecond}, repeatDuration(150, 10*time.Microsecond)...), 64},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := newTestScheduler(1)
			s.Submit(specOf(1000, nil))
			var st []Status
			for _, d := range tc.durations {
				launched := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 1}})
				st = append(st, Status{TaskID: launched[0].TaskID, ExecutorID: 1, State: Finished, Duration: d})
				s.StatusUpdates(st[len(st)-1:])
			}
			if got := s.QueueAhead(2, 64); got != tc.want {
				t.Errorf("QueueAhead(2, 64) = %d, want %d", got, tc.want)
			}
		})
	}
}

func repeatDuration(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// The scheduler publishes what one call emitted together, in order: a
// round's task starts, then a status batch's task ends in the batch's
// order and the stage's end, and what the task set's waiter publishes
// when it wakes (the job's end) comes after them.
func TestEventsPublishedInOrder(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now()) // still: no start is released
	bus := events.NewBus(clk, nil)
	var got []string
	bus.Subscribe("test", 0, func(e events.Event) {
		switch e := e.(type) {
		case *events.TaskStart:
			got = append(got, fmt.Sprintf("start %d", e.TaskID))
		case *events.TaskEnd:
			got = append(got, fmt.Sprintf("end %d %s%s", e.TaskID, e.State, map[bool]string{true: " with its start"}[!e.Launch.IsZero()]))
		default:
			got = append(got, events.Name(e))
		}
	})
	s := onBackend(Options{MaxFailures: 2, CPUsPerTask: 1, Events: bus, Clock: clk}, &fakeBackend{})
	ts := s.Submit(specOf(3, nil))
	ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 3}})
	waited := make(chan struct{})
	go func() {
		<-ts.Done()
		bus.Publish(&events.JobEnd{JobID: 1})
		close(waited)
	}()
	s.StatusUpdates([]Status{{TaskID: ds[1].TaskID, State: Finished}, {TaskID: ds[0].TaskID, State: Finished},
		{TaskID: ds[2].TaskID, State: Finished}})
	<-waited
	bus.Close()
	// The tasks end before StartDelay: each start comes with its end.
	want := []string{"StageSubmitted", "end 2 SUCCESS with its start", "end 1 SUCCESS with its start",
		"end 3 SUCCESS with its start", "StageCompleted", "JobEnd"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// A task's start is held back for StartDelay: a task that ends sooner is
// published as one TaskEnd carrying its launch time; the start of one
// still running then is published on its own, at its launch time, and its
// end later without one.
func TestStartsHeldBack(t *testing.T) {
	launchedAt := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(launchedAt)
	bus := events.NewBus(clk, nil)
	got := make(chan string, 16)
	bus.Subscribe("test", 0, func(e events.Event) {
		switch e := e.(type) {
		case *events.TaskStart:
			got <- fmt.Sprintf("start %d at %v", e.TaskID, e.Time.Sub(launchedAt))
		case *events.TaskEnd:
			if e.Launch.IsZero() {
				got <- fmt.Sprintf("end %d", e.TaskID)
			} else {
				got <- fmt.Sprintf("end %d launched %v", e.TaskID, e.Launch.Sub(launchedAt))
			}
		}
	})
	defer bus.Close()
	s := onBackend(Options{MaxFailures: 2, CPUsPerTask: 1, Events: bus, Clock: clk}, &fakeBackend{})
	s.Submit(specOf(3, nil))
	ds := s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 3}})
	next := func() string {
		t.Helper()
		select {
		case e := <-got:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
			return ""
		}
	}
	expect := func(want ...string) {
		t.Helper()
		var events []string
		for range want {
			events = append(events, next())
		}
		if diff := cmp.Diff(want, events); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	}
	clk.Step(StartDelay / 2)
	s.StatusUpdates([]Status{{TaskID: ds[0].TaskID, State: Finished}})
	expect("end 1 launched 0s")
	clk.Step(StartDelay / 2) // the timer: the other two are due
	expect("start 2 at 0s", "start 3 at 0s")
	s.StatusUpdates([]Status{{TaskID: ds[1].TaskID, State: Failed, Err: "boom"}})
	expect("end 2")
	// The retry launches while task 3 runs on: its start is held again.
	ds = s.ResourceOffers([]Offer{{ExecutorID: 2, Cores: 1}})
	clk.Step(StartDelay)
	expect(fmt.Sprintf("start %d at %v", ds[0].TaskID, StartDelay))
	select {
	case e := <-got:
		t.Errorf("unexpected event %s", e)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestTaskIDsStartAboveFirstTaskID: a restarted driver's tasks are
// numbered above every earlier attempt's.
func TestTaskIDsStartAboveFirstTaskID(t *testing.T) {
	s := onBackend(Options{FirstTaskID: 2 << 40}, &fakeBackend{})
	s.Submit(specOf(2, map[int]string{}))
	var ids []int64
	for _, d := range s.ResourceOffers([]Offer{{ExecutorID: 1, Cores: 2}}) {
		ids = append(ids, d.TaskID)
	}
	if diff := cmp.Diff([]int64{2<<40 + 1, 2<<40 + 2}, ids); diff != "" {
		t.Errorf("task ids (-want +got):\n%s", diff)
	}
}

// TestExecutorLostListeners: every listener hears of a lost executor, after
// its tasks were resubmitted.
func TestExecutorLostListeners(t *testing.T) {
	s, _ := newTestScheduler(4)
	var heard [2][]executorid.ID
	for i := range heard {
		s.OnExecutorLost(func(id executorid.ID) {
			if n := s.RunningTasks(); n != 0 {
				t.Errorf("listener %d heard of executor %d with %d tasks still running on it", i, id, n)
			}
			heard[i] = append(heard[i], id)
		})
	}
	s.Submit(specOf(1, map[int]string{}))
	s.ResourceOffers([]Offer{{ExecutorID: 3, Cores: 1}})
	s.ExecutorLost(3, LossReason{Message: "pod deleted"})
	if diff := cmp.Diff([2][]executorid.ID{{3}, {3}}, heard); diff != "" {
		t.Errorf("executors heard lost (-want +got):\n%s", diff)
	}
}
