package scheduler

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

// Offer is an executor's free capacity.
type Offer struct {
	ExecutorID executorid.ID
	Host       string
	Cores      int
}

// TaskDescription is one task attempt assigned to an executor.
type TaskDescription struct {
	TaskID int64
	// TaskSetID names the task set (one attempt of one stage) uniquely
	// for as long as the scheduler lives: executors keep its Plan under it.
	TaskSetID    int64
	JobID        int64
	StageID      int
	StageAttempt int
	Partition    int
	Attempt      int
	Func         string
	// Plan is the task set's shared plan (TaskSetSpec.Plan), the same
	// slice for every task of the set.
	Plan []byte
	// Payload is the task's own input.
	Payload    []byte
	CPUs       int
	ExecutorID executorid.ID
}

// State is a task's state as reported by the executor.
type State int

const (
	Running State = iota
	Finished
	Failed
	Killed
)

func (s State) String() string {
	switch s {
	case Running:
		return "RUNNING"
	case Finished:
		return "FINISHED"
	case Failed:
		return "FAILED"
	case Killed:
		return "KILLED"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Status is a task attempt's terminal report, with its result already
// fetched when it was too large to travel inline.
type Status struct {
	TaskID     int64
	ExecutorID executorid.ID
	State      State
	Result     []byte
	Err        string
	Stack      string
	Panicked   bool
	Duration   time.Duration
	// Metrics is what the executor measured while running the task.
	Metrics events.TaskMetrics
	// FetchFailed is set when the task failed because it could not read a
	// shuffle block: the map output must be recomputed, which retrying the
	// task alone cannot do.
	FetchFailed *FetchFailedError
}

// FetchFailedError ends a task set whose task could not read a map output.
// It is not counted against spark.task.maxFailures; the DAG scheduler
// recomputes the output and resubmits the stage.
type FetchFailedError struct {
	ShuffleID, MapID int
	ExecutorID       executorid.ID
	Address          string
	Message          string
}

func (e *FetchFailedError) Error() string {
	return fmt.Sprintf("fetching map output %d of shuffle %d from executor %s (%s) failed: %s",
		e.MapID, e.ShuffleID, e.ExecutorID, e.Address, e.Message)
}

// LossReason says why an executor went away. Only a loss the application
// caused (its code crashed the process) counts as a failure of the tasks that
// were running there; a node lost, a pod evicted or an executor killed by the
// cluster manager does not.
type LossReason struct {
	Message     string
	ExitCode    int
	CausedByApp bool
	// Cause is the kind of loss in one word (one of the Cause constants),
	// so metrics and filters need not parse Message.
	Cause string
}

// Causes of executor losses. The set is small and fixed: metrics label
// removals with it.
const (
	// CauseKilled: the driver removed the executor (dynamic allocation, a
	// kill, its pod deleted by the driver).
	CauseKilled = "killed"
	// CauseDecommissioned: the executor left on SIGTERM once its tasks
	// were done.
	CauseDecommissioned = "decommissioned"
	// CauseDisconnected: its connection ended and nothing said why.
	CauseDisconnected = "disconnected"
	// CauseHeartbeatTimeout: it was not heard from for spark.network.timeout.
	CauseHeartbeatTimeout = "heartbeat_timeout"
	// CauseExited: its process or container ended by itself.
	CauseExited = "exited"
	// CauseOOMKilled: its container was killed for exceeding its memory.
	CauseOOMKilled = "oom_killed"
	// CauseStartFailed: its pod could not start (image, configuration).
	CauseStartFailed = "start_failed"
	// CauseEvicted: the kubelet or the eviction API evicted its pod.
	CauseEvicted = "evicted"
	// CausePreempted: the scheduler preempted its pod.
	CausePreempted = "preempted"
	// CauseNodeLost: its node stopped reporting or is gone.
	CauseNodeLost = "node_lost"
	// CauseDeleted: a user or the cluster, not the driver, deleted its pod.
	CauseDeleted = "deleted"
)

func (r LossReason) String() string {
	if r.ExitCode != 0 {
		return fmt.Sprintf("%s (exit code %d)", r.Message, r.ExitCode)
	}
	return r.Message
}

// Backend carries out the scheduler's decisions. Implementations must not
// call back into the scheduler synchronously from these methods.
type Backend interface {
	// ReviveOffers asks the backend to offer its free resources soon.
	ReviveOffers()
	// KillTask asks the executor running a task to stop it.
	KillTask(taskID int64, executorID executorid.ID, reason string)
}

// PlanKeeper is a Backend that keeps something per task set (executors
// cache each set's plan) and drops it when the set ends.
type PlanKeeper interface {
	// TaskSetEnded says no task of the set will be launched again. It is
	// called with the scheduler's lock held: it must not block or call the
	// scheduler.
	TaskSetEnded(id int64)
}

// TaskFailedError is the root cause of a failed task set: the last failure
// of the task that exhausted its attempts.
type TaskFailedError struct {
	StageID   int
	Partition int
	Attempts  int
	Executor  executorid.ID
	Reason    string
	Stack     string
}

func (e *TaskFailedError) Error() string {
	msg := fmt.Sprintf("task %d in stage %d failed %d times, most recent failure on executor %s: %s",
		e.Partition, e.StageID, e.Attempts, e.Executor, e.Reason)
	if e.Stack != "" {
		msg += "\n" + e.Stack
	}
	return msg
}
