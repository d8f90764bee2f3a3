package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

// TaskSpec is one partition's task of a task set.
type TaskSpec struct {
	Partition int
	// Payload is the task's own input (its split, records or blocks);
	// what every task of the set shares belongs in TaskSetSpec.Plan.
	Payload []byte
}

// TaskSetSpec describes the tasks of one stage attempt.
type TaskSetSpec struct {
	JobID        int64
	StageID      int
	StageAttempt int
	Func         string
	// Plan is what every task of the set shares (the stage's encoded
	// plan): executors are sent it once, not with every task.
	Plan []byte
	// Name describes the stage in the UI ("map at wordcount.go:31").
	Name  string
	Tasks []TaskSpec
	// OnSuccess receives each partition's first successful result. It runs
	// under the scheduler's lock, so it must be quick and must not call the
	// scheduler.
	OnSuccess func(partition int, result []byte)
}

// Options configures a Scheduler.
type Options struct {
	// MaxFailures is spark.task.maxFailures: how many times one task may fail
	// before its task set is aborted.
	MaxFailures int
	// CPUsPerTask is spark.task.cpus.
	CPUsPerTask int
	// MaxResultSize is spark.driver.maxResultSize; 0 means no limit.
	MaxResultSize int64
	// MaxTaskSize is spark.rpc.message.maxSize: a task whose payload is
	// larger fails its task set at submission; 0 means no limit.
	MaxTaskSize int64
	// FirstTaskID is the id just below the first task's: a restarted
	// driver's attempt numbers its tasks above every earlier attempt's, so
	// an executor never takes one attempt's task for another's, and map
	// outputs, named by task, never collide across attempts.
	FirstTaskID int64
	// ExecutorLost, when set, is told of every lost executor (after the
	// scheduler has resubmitted its tasks), so map outputs on it can be
	// forgotten.
	ExecutorLost func(executor executorid.ID)
	// Events, when set, hears of every stage attempt and task attempt.
	Events *events.Bus
	// Clock runs the timer that publishes the starts of tasks still
	// running after StartDelay; the real clock when nil.
	Clock  clock.WithDelayedExecution
	Logger *slog.Logger
}

// StartDelay is how long a task's TaskStart is held back: a task that
// ends sooner is published as one TaskEnd with its Launch time, one event
// instead of two through every consumer of the bus (the UI's store, the
// metrics, the event log), which the no-op tasks of a busy application
// otherwise pay for twice. Pages and metrics see a start at most this
// much later; the consumers already take the stream every few
// milliseconds.
const StartDelay = 10 * time.Millisecond

// Scheduler assigns tasks of active task sets to resource offers, first in
// first out across task sets.
type Scheduler struct {
	opts    Options
	backend Backend
	plans   PlanKeeper // the backend, when it keeps plans per task set
	log     *slog.Logger

	// lostListeners hear of every lost executor (OnExecutorLost).
	lostMu        sync.Mutex
	lostListeners []func(executorid.ID)

	mu         sync.Mutex
	nextTaskID int64
	nextSetID  int64
	active     []*TaskSet
	running    map[int64]*attempt
	byExecutor map[executorid.ID]map[int64]struct{}
	// emitted are the events of the code holding mu, published together
	// as it lets go (unlock), so that they keep their order and cost the
	// bus one append; starts and ends are their allocations, a slab at a
	// time.
	emitted []events.Event
	starts  slab[events.TaskStart]
	ends    slab[events.TaskEnd]
	// held are the attempts whose TaskStart is held back, in launch
	// order; one that ended or whose start was published since is
	// skipped. now is the time of the latest launch, which tells while
	// tasks launch which held starts are due; timer publishes them when
	// none launch.
	held  []heldStart
	now   time.Time
	timer clock.Timer
	// sectionTime is the launch time of the locked section's tasks, read
	// once per section; zero until the first.
	sectionTime time.Time
}

// emitLocked queues e for the bus until mu is let go.
func (s *Scheduler) emitLocked(e events.Event) {
	s.emitted = append(s.emitted, e)
}

// unlock publishes the events emitted while mu was held, then lets go of
// it: still under mu, so events of two sections never swap.
func (s *Scheduler) unlock() {
	s.publishLocked()
	s.sectionTime = time.Time{}
	s.mu.Unlock()
}

// publishLocked publishes the events emitted so far, after the held starts
// that are due.
func (s *Scheduler) publishLocked() {
	s.releaseStartsLocked(s.now.Add(-StartDelay))
	if len(s.emitted) > 0 {
		s.opts.Events.PublishAll(s.emitted)
		clear(s.emitted)
		s.emitted = s.emitted[:0]
	}
}

// slab hands out values of T allocated a few dozen at a time: one
// allocation, not one per task event.
type slab[T any] struct{ free []T }

func (b *slab[T]) next() *T {
	if len(b.free) == 0 {
		b.free = make([]T, 64)
	}
	v := &b.free[0]
	b.free = b.free[1:]
	return v
}

// attempt is a launched task attempt.
type attempt struct {
	set      *TaskSet
	index    int
	number   int // the task's attempt number, from 0
	executor executorid.ID
	// fetching is the declared size of a result being fetched, reserved
	// against spark.driver.maxResultSize (CanFetchResult).
	fetching int64
	// launched is when it launched while its TaskStart is held back;
	// zero once published, alone or with its end.
	launched time.Time
}

// OnExecutorLost adds f to what hears of every lost executor, after the
// scheduler resubmitted its tasks. The DAG registers itself as it is built
// on the scheduler, to forget the map outputs the executor held: the
// scheduler exists first, and no loss can come before an executor runs.
func (s *Scheduler) OnExecutorLost(f func(executorid.ID)) {
	s.lostMu.Lock()
	s.lostListeners = append(s.lostListeners, f)
	s.lostMu.Unlock()
}

// CPUsPerTask is the number of cores each task occupies.
func (s *Scheduler) CPUsPerTask() int { return s.opts.CPUsPerTask }

// TaskSet is a submitted task set: a handle to wait for or cancel it.
type TaskSet struct {
	spec TaskSetSpec
	id   int64 // unique in the scheduler: names the set's plan on executors
	done chan struct{}
	err  error

	// Guarded by the scheduler's mutex.
	pending     []int // indexes not yet launched, in order
	retry       []int // indexes to relaunch first (failed or lost)
	failures    []int
	succeeded   []bool
	numSucceded int
	resultBytes int64
	// fetchingBytes is what results being fetched declared: counted with
	// resultBytes, so parallel fetches cannot overshoot the limit together.
	fetchingBytes int64
	// taskNanos is a moving average of the set's successful tasks'
	// durations, 0 until one has finished (QueueAhead).
	taskNanos   float64
	finished    bool
	lastFailure []*TaskFailedError
}

// Done is closed when the task set has finished, successfully or not.
func (ts *TaskSet) Done() <-chan struct{} { return ts.done }

// Err is the task set's outcome once Done is closed: nil on success.
func (ts *TaskSet) Err() error {
	<-ts.done
	return ts.err
}

// Submit queues a task set and asks the backend for offers.
func (s *Scheduler) Submit(spec TaskSetSpec) *TaskSet {
	ts := &TaskSet{
		spec:        spec,
		done:        make(chan struct{}),
		pending:     make([]int, len(spec.Tasks)),
		failures:    make([]int, len(spec.Tasks)),
		succeeded:   make([]bool, len(spec.Tasks)),
		lastFailure: make([]*TaskFailedError, len(spec.Tasks)),
	}
	for i := range ts.pending {
		ts.pending[i] = i
	}
	if len(spec.Tasks) == 0 {
		ts.finished = true
		close(ts.done)
		return ts
	}
	// As Spark's TaskSetManager, a task too large to send fails the task
	// set at once: sent, it would break the executor's connection. The
	// first of a stage's tasks an executor runs comes with the stage's
	// plan, so each task must fit with the plan: alone each could be up to
	// the limit, and together past what one message carries.
	if max := s.opts.MaxTaskSize; max > 0 {
		plan := int64(len(spec.Plan))
		if plan > max {
			ts.finished = true
			ts.err = fmt.Errorf("the plan of stage %d is %d bytes serialized, over spark.rpc.message.maxSize (%d bytes): "+
				"raise spark.rpc.message.maxSize", spec.StageID, plan, max)
			close(ts.done)
			return ts
		}
		for _, t := range spec.Tasks {
			if n := int64(len(t.Payload)); plan > 0 && n <= max && plan+n > max {
				ts.finished = true
				ts.err = fmt.Errorf("the task of stage %d partition %d is %d bytes serialized, and with its stage's plan (%d bytes) "+
					"over spark.rpc.message.maxSize (%d bytes): give it a smaller input (read large data inside the task instead) "+
					"or raise spark.rpc.message.maxSize", spec.StageID, t.Partition, n, plan, max)
				close(ts.done)
				return ts
			}
			if n := int64(len(t.Payload)); n > max {
				ts.finished = true
				ts.err = fmt.Errorf("the task of stage %d partition %d is %d bytes serialized, over spark.rpc.message.maxSize (%d bytes): "+
					"give it a smaller input (read large data inside the task instead) or raise spark.rpc.message.maxSize",
					spec.StageID, t.Partition, n, max)
				close(ts.done)
				return ts
			}
		}
	}
	s.opts.Events.Publish(&events.StageSubmitted{JobID: spec.JobID, StageID: spec.StageID, Attempt: spec.StageAttempt,
		Name: spec.Name, NumTasks: len(spec.Tasks)})
	s.mu.Lock()
	s.nextSetID++
	ts.id = s.nextSetID
	s.active = append(s.active, ts)
	s.mu.Unlock()
	s.backend.ReviveOffers()
	return ts
}

// Run submits a task set and waits for it; cancelling ctx cancels the task
// set and kills its running tasks.
func (s *Scheduler) Run(ctx context.Context, spec TaskSetSpec) error {
	ts := s.Submit(spec)
	select {
	case <-ts.done:
		return ts.err
	case <-ctx.Done():
		s.Cancel(ts, fmt.Errorf("job cancelled: %w", context.Cause(ctx)))
		<-ts.done
		return ts.err
	}
}

// Cancel aborts a task set with err and kills its running tasks.
func (s *Scheduler) Cancel(ts *TaskSet, err error) {
	s.mu.Lock()
	kills := s.abortLocked(ts, err)
	s.unlock()
	s.kill(kills, "job cancelled")
}

// ResourceOffers assigns pending tasks to the offered cores, spreading them
// round-robin across the offers.
func (s *Scheduler) ResourceOffers(offers []Offer) []TaskDescription {
	s.mu.Lock()
	defer s.unlock()
	if len(s.active) == 0 {
		return nil
	}
	cpus := s.opts.CPUsPerTask
	free := make([]int, len(offers))
	for i, o := range offers {
		free[i] = o.Cores
	}
	var out []TaskDescription
	for launched := true; launched; {
		launched = false
		for i := range offers {
			if free[i] < cpus {
				continue
			}
			ts, index, ok := s.nextTaskLocked()
			if !ok {
				return out
			}
			free[i] -= cpus
			launched = true
			out = append(out, s.launchLocked(ts, index, offers[i].ExecutorID))
		}
	}
	return out
}

// nextTaskLocked pops the next task to run, retries first, oldest task set
// first.
func (s *Scheduler) nextTaskLocked() (*TaskSet, int, bool) {
	for _, ts := range s.active {
		for len(ts.retry) > 0 {
			i := ts.retry[0]
			ts.retry = ts.retry[1:]
			if !ts.succeeded[i] {
				return ts, i, true
			}
		}
		for len(ts.pending) > 0 {
			i := ts.pending[0]
			ts.pending = ts.pending[1:]
			if !ts.succeeded[i] {
				return ts, i, true
			}
		}
	}
	return nil, 0, false
}

func (s *Scheduler) launchLocked(ts *TaskSet, index int, executor executorid.ID) TaskDescription {
	s.nextTaskID++
	tid := s.nextTaskID
	a := &attempt{set: ts, index: index, number: ts.failures[index], executor: executor}
	s.running[tid] = a
	tasks := s.byExecutor[executor]
	if tasks == nil {
		tasks = map[int64]struct{}{}
		s.byExecutor[executor] = tasks
	}
	tasks[tid] = struct{}{}
	t := ts.spec.Tasks[index]
	if s.opts.Events.Enabled() {
		s.holdStartLocked(tid, a)
	}
	return TaskDescription{
		TaskID:       tid,
		TaskSetID:    ts.id,
		JobID:        ts.spec.JobID,
		StageID:      ts.spec.StageID,
		StageAttempt: ts.spec.StageAttempt,
		Partition:    t.Partition,
		Attempt:      ts.failures[index],
		Func:         ts.spec.Func,
		Plan:         ts.spec.Plan,
		Payload:      t.Payload,
		CPUs:         s.opts.CPUsPerTask,
		ExecutorID:   executor,
	}
}

// queueWindow is how much of a stage's measured task time QueueAhead
// queues per core: more than a driver round trip, so a core never waits
// for its next launch between short tasks, and short enough that the tasks
// queued on one executor delay a stage's end by no more than that.
const queueWindow = 2 * time.Millisecond

// QueueAhead is how many tasks per core a backend should queue ahead of
// free cores for the next tasks to launch: floor until their task set's
// tasks have been measured, then queueWindow's worth of them, between
// floor and most. Tasks of microseconds then travel in large batches,
// whose cost per task is a fraction of a round trip's.
func (s *Scheduler) QueueAhead(floor, most int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ts := range s.active {
		if len(ts.pending)+len(ts.retry) == 0 {
			continue
		}
		if ts.taskNanos <= 0 {
			return floor
		}
		n := math.Ceil(float64(queueWindow) / ts.taskNanos)
		return int(min(max(n, float64(floor)), float64(most)))
	}
	return floor
}

// StageProgress is the state of an active task set, for progress reports.
type StageProgress struct {
	StageID, Attempt     int
	Total, Done, Running int
}

// Progress reports the active task sets, oldest first.
func (s *Scheduler) Progress() []StageProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]StageProgress, 0, len(s.active))
	index := make(map[*TaskSet]int, len(s.active))
	for _, ts := range s.active {
		index[ts] = len(out)
		out = append(out, StageProgress{StageID: ts.spec.StageID, Attempt: ts.spec.StageAttempt,
			Total: len(ts.spec.Tasks), Done: ts.numSucceded})
	}
	for _, a := range s.running {
		if i, ok := index[a.set]; ok {
			out[i].Running++
		}
	}
	return out
}

// RunningByExecutor reports how many task attempts run on each executor
// that runs any.
func (s *Scheduler) RunningByExecutor() map[executorid.ID]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[executorid.ID]int, len(s.byExecutor))
	for id, tasks := range s.byExecutor {
		if len(tasks) > 0 {
			out[id] = len(tasks)
		}
	}
	return out
}

// RunningTasks reports how many task attempts are running.
func (s *Scheduler) RunningTasks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running)
}

// PendingTasks reports how many tasks wait for a core.
func (s *Scheduler) PendingTasks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ts := range s.active {
		n += len(ts.pending) + len(ts.retry)
	}
	return n
}
