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

func (e *Executor) launch(t *pb.TaskDescription) {
	tid := t.GetTaskId()
	if e.draining.Load() {
		e.out.addStatus(&pb.TaskStatus{TaskId: tid, State: pb.TaskState_TASK_STATE_KILLED, Error: "executor is decommissioning"})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	e.running[tid] = cancel
	e.mu.Unlock()
	go e.runTask(ctx, cancel, t)
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

func (e *Executor) runTask(ctx context.Context, cancel context.CancelFunc, t *pb.TaskDescription) {
	if !e.acquire(int(t.GetCpus())) {
		cancel()
		e.finish(t.GetTaskId(), &pb.TaskStatus{TaskId: t.GetTaskId(), State: pb.TaskState_TASK_STATE_KILLED, Error: "executor is decommissioning"})
		return
	}
	defer e.release(int(t.GetCpus()))
	start := time.Now()
	var m funcs.Metrics
	o := RunTask(ctx, funcs.Task{
		TaskID:    t.GetTaskId(),
		JobID:     t.GetJobId(),
		StageID:   int(t.GetStageId()),
		Partition: int(t.GetPartition()),
		Attempt:   int(t.GetAttempt()),
		Shuffle:   e.shuffles,
		Store:     e.store.Load(),
		Metrics:   &m,
	}, t.GetFunc(), t.GetPayload())
	killed := ctx.Err() != nil
	cancel()
	st := &pb.TaskStatus{TaskId: t.GetTaskId(), DurationNanos: int64(time.Since(start)), Metrics: MetricsProto(m)}
	if e.opts.StoreRetries != nil {
		if r := e.opts.StoreRetries(); len(r) > 0 {
			if st.Metrics == nil {
				st.Metrics = &pb.TaskMetrics{}
			}
			st.Metrics.StoreRetries = r
		}
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
			e.results[t.GetTaskId()] = o.Result
			e.mu.Unlock()
			st.Indirect, st.ResultSize = true, int64(len(o.Result))
		} else {
			st.Result = o.Result
		}
	}
	e.finish(t.GetTaskId(), st)
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

func (e *Executor) finish(tid int64, st *pb.TaskStatus) {
	e.out.addStatus(st)
	e.mu.Lock()
	delete(e.running, tid)
	if len(e.running) == 0 {
		e.idle.Broadcast()
	}
	e.mu.Unlock()
}

func (e *Executor) killTask(tid int64, reason string) {
	e.mu.Lock()
	cancel := e.running[tid]
	e.mu.Unlock()
	if cancel != nil {
		e.log.Info("killing task", "task", tid, "reason", reason)
		cancel()
	}
}

func (e *Executor) killAll(reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for tid, cancel := range e.running {
		e.log.Debug("killing task", "task", tid, "reason", reason)
		cancel()
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
