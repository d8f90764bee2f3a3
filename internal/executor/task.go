package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/shuffle"
)

// Outcome is what running one task produced.
type Outcome struct {
	Result   []byte
	Err      error
	Stack    string
	Panicked bool
	// FetchFailed is set when the task could not read a shuffle block.
	FetchFailed *shuffle.FetchFailedError
}

// RunTask runs the registered function fn on payload. A panic in the task is
// recovered into a failed outcome that keeps the panic value and the stack,
// so one bad record fails a task, not the executor.
func RunTask(ctx context.Context, t funcs.Task, fn string, payload []byte) (out Outcome) {
	f, ok := funcs.Lookup(fn)
	if !ok {
		return Outcome{Err: fmt.Errorf("function %q is not registered in this binary; is the executor running the same build as the driver?", fn)}
	}
	defer func() {
		if r := recover(); r != nil {
			out = Outcome{Err: fmt.Errorf("panic: %v", r), Stack: string(debug.Stack()), Panicked: true}
		}
	}()
	res, err := f(ctx, t, payload)
	o := Outcome{Result: res, Err: err}
	errors.As(err, &o.FetchFailed)
	return o
}

// launch starts a task of the task set whose plan is p (nil when the
// driver never sent it, which fails the task).
func (e *Executor) launch(t *pb.TaskDescription, p *pb.StagePlan) {
	tid := t.GetTaskId()
	if e.draining.Load() {
		e.out.addStatus(&pb.TaskStatus{TaskId: tid, State: pb.TaskState_TASK_STATE_KILLED, Error: "executor is decommissioning"})
		return
	}
	if p == nil {
		e.out.addStatus(&pb.TaskStatus{TaskId: tid, State: pb.TaskState_TASK_STATE_FAILED,
			Error: fmt.Sprintf("the driver sent no plan for task set %d", t.GetTaskSet())})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	gen := e.gen.Load()
	e.running[tid] = runningTask{cancel: cancel, gen: gen}
	e.mu.Unlock()
	e.spawn(func() { e.runTask(ctx, cancel, gen, t, p) })
}

// spawn runs f on a worker goroutine: one that finished its task and waits
// for another, or a new one. Reusing them saves a goroutine's creation and
// the growth of its stack per task, which tasks of microseconds notice.
// Workers are as many as tasks ever ran or waited for a core at once.
func (e *Executor) spawn(f func()) {
	select {
	case e.waiting <- f:
	default:
		go e.worker(f)
	}
}

func (e *Executor) worker(f func()) {
	for {
		f()
		select {
		case f = <-e.waiting:
		case <-e.done:
			return
		}
	}
}

// acquire waits for a task's cores: the driver may queue a few tasks ahead
// of free cores so an executor never idles between tasks, but no more tasks
// run at once than the executor has cores. It fails once the executor is
// draining, so queued tasks go back to the driver instead of delaying exit.
func (e *Executor) acquire(cpus int) bool {
	cpus = min(max(cpus, 1), e.opts.Cores)
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.freeCores < cpus && !e.draining.Load() {
		e.coreFreed.Wait()
	}
	if e.draining.Load() {
		return false
	}
	e.freeCores -= cpus
	return true
}

func (e *Executor) release(cpus int) {
	cpus = min(max(cpus, 1), e.opts.Cores)
	e.mu.Lock()
	e.freeCores += cpus
	e.coreFreed.Signal()
	e.mu.Unlock()
}

// runningTask is a task launched and not finished: how to kill it, and
// the session (Executor.gen) its status belongs to.
type runningTask struct {
	cancel context.CancelFunc
	gen    uint64
}

func (e *Executor) runTask(ctx context.Context, cancel context.CancelFunc, gen uint64, t *pb.TaskDescription, p *pb.StagePlan) {
	if !e.acquire(int(p.GetCpus())) {
		cancel()
		e.finish(t.GetTaskId(), gen, &pb.TaskStatus{TaskId: t.GetTaskId(), State: pb.TaskState_TASK_STATE_KILLED, Error: "executor is decommissioning"})
		return
	}
	defer e.release(int(p.GetCpus()))
	start := time.Now()
	var m funcs.Metrics
	o := RunTask(ctx, funcs.Task{
		TaskID:    t.GetTaskId(),
		JobID:     p.GetJobId(),
		StageID:   int(p.GetStageId()),
		Partition: int(t.GetPartition()),
		Attempt:   int(t.GetAttempt()),
		Shuffle:   e.shuffles,
		Store:     e.store.Load(),
		Metrics:   &m,
		Plan:      p.GetPlan(),
	}, p.GetFunc(), t.GetPayload())
	killed := ctx.Err() != nil
	cancel()
	d := time.Since(start)
	// The process's object-store retries since the last status ride on this
	// one, for the driver's counter.
	var retries map[string]int64
	if e.opts.StoreRetries != nil {
		retries = e.opts.StoreRetries()
	}
	if !killed && o.Err == nil && len(o.Result) == 0 && m == (funcs.Metrics{}) && len(retries) == 0 {
		e.finishQuiet(t.GetTaskId(), gen, d)
		return
	}
	st := &pb.TaskStatus{TaskId: t.GetTaskId(), DurationNanos: int64(d), Metrics: MetricsProto(m)}
	if len(retries) > 0 {
		if st.Metrics == nil {
			st.Metrics = &pb.TaskMetrics{}
		}
		st.Metrics.StoreRetries = retries
	}
	switch {
	case killed:
		st.State = pb.TaskState_TASK_STATE_KILLED
		st.Error = "task killed"
	case o.Err != nil:
		st.State = pb.TaskState_TASK_STATE_FAILED
		st.Error, st.Stack, st.Panicked = o.Err.Error(), o.Stack, o.Panicked
		if ff := o.FetchFailed; ff != nil {
			st.FetchFailure = &pb.FetchFailure{ShuffleId: int32(ff.ShuffleID), MapId: int32(ff.MapID),
				ExecutorId: ff.ExecutorID.String(), Address: ff.Address, Message: ff.Error()}
		}
	default:
		st.State = pb.TaskState_TASK_STATE_FINISHED
		if int64(len(o.Result)) > e.maxDirectResult {
			e.mu.Lock()
			if e.gen.Load() == gen {
				e.results[t.GetTaskId()] = o.Result
			}
			e.mu.Unlock()
			st.Indirect, st.ResultSize = true, int64(len(o.Result))
		} else {
			st.Result = o.Result
		}
	}
	e.finish(t.GetTaskId(), gen, st)
}

// MetricsProto is m as the task status carries it; nil when nothing was
// measured, so tasks that read and write nothing cost no bytes.
func MetricsProto(m funcs.Metrics) *pb.TaskMetrics {
	if m == (funcs.Metrics{}) {
		return nil
	}
	return &pb.TaskMetrics{
		InputBytes: m.InputBytes, InputRecords: m.InputRecords,
		OutputBytes: m.OutputBytes, OutputRecords: m.OutputRecords,
		ShuffleReadBytes: m.ShuffleReadBytes, ShuffleReadRecords: m.ShuffleReadRecords,
		ShuffleWriteBytes: m.ShuffleWriteBytes, ShuffleWriteRecords: m.ShuffleWriteRecords,
		SpillBytes: m.SpillBytes,
	}
}

// finish reports a task's status to the driver of the session that
// launched it (gen); a lost driver's tasks report nothing to its next
// attempt. The status is queued before the task stops counting as running,
// so that a decommission waiting for idleness sends it. A session that
// ends between the check and the queueing lets one status through to the
// next, whose driver knows no such task (attempts number their tasks
// apart) and drops it: the check stays a load, off the executor's lock.
func (e *Executor) finish(tid int64, gen uint64, st *pb.TaskStatus) {
	if e.gen.Load() == gen {
		e.out.addStatus(st)
	}
	e.forget(tid, gen)
}

// finishQuiet reports a task that finished with nothing but its duration.
func (e *Executor) finishQuiet(tid int64, gen uint64, d time.Duration) {
	if e.gen.Load() == gen {
		e.out.addFinished(tid, d)
	}
	e.forget(tid, gen)
}

func (e *Executor) forget(tid int64, gen uint64) {
	e.mu.Lock()
	if r, ok := e.running[tid]; ok && r.gen == gen {
		delete(e.running, tid)
		if len(e.running) == 0 {
			e.idle.Broadcast()
		}
	}
	e.mu.Unlock()
}

func (e *Executor) killTask(tid int64, reason string) {
	e.mu.Lock()
	cancel := e.running[tid].cancel
	e.mu.Unlock()
	if cancel != nil {
		e.log.Info("killing task", "task", tid, "reason", reason)
		cancel()
	}
}

func (e *Executor) killAll(reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for tid, r := range e.running {
		e.log.Debug("killing task", "task", tid, "reason", reason)
		r.cancel()
	}
}

func (e *Executor) waitIdle() {
	e.mu.Lock()
	for len(e.running) > 0 {
		e.idle.Wait()
	}
	e.mu.Unlock()
}

func (e *Executor) numRunning() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

func (e *Executor) runningIDs() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]int64, 0, len(e.running))
	for id := range e.running {
		ids = append(ids, id)
	}
	return ids
}
