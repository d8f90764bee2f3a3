package appstate

import (
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

// Job statuses, as Spark's REST API writes them (JobExecutionStatus).
const (
	JobRunning   = "RUNNING"
	JobSucceeded = "SUCCEEDED"
	JobFailed    = "FAILED"
)

// Stage statuses, as Spark's REST API writes them (StageStatus).
const (
	StageActive   = "ACTIVE"
	StageComplete = "COMPLETE"
	StageFailed   = "FAILED"
)

// TaskRunning is a task attempt that has not ended; ended ones have
// events.TaskSuccess, events.TaskFailed or events.TaskKilled.
const TaskRunning = "RUNNING"

// Executor states.
const (
	// ExecutorPending is an executor whose pod the cluster placed but that
	// has not registered with the driver yet.
	ExecutorPending = "Pending"
	ExecutorActive  = "Active"
	// ExecutorDead is an executor the driver removed, or whose pod ended
	// before it registered.
	ExecutorDead = "Dead"
)

// App is the application as a whole.
type App struct {
	ID, Name, Master, User, DeployMode string
	// DriverHost is where the driver runs (its pod's name on Kubernetes).
	DriverHost string
	Start, End time.Time
	// Ended is set by AppEnd; Err is its error, empty on success.
	Ended bool
	Err   string
	// LastUpdated is the time of the latest event.
	LastUpdated time.Time
}

// Job is one action of the program.
type Job struct {
	ID   int64
	Name string
	// Submitted and Completed are zero until known.
	Submitted, Completed time.Time
	Status               string
	Err                  string
	StageIDs             []int
	// NumTasks sums the tasks of the job's stages (their first attempts).
	NumTasks                                              int
	ActiveTasks, CompletedTasks, FailedTasks, KilledTasks int
	// CompletedIndices counts partitions done, however many attempts
	// each took.
	CompletedIndices                            int
	ActiveStages, CompletedStages, FailedStages int
	// KilledTasksSummary counts killed tasks by reason.
	KilledTasksSummary map[string]int
}

// StageKey names a stage attempt.
type StageKey struct{ ID, Attempt int }

// Stage is one stage attempt, with totals over all its tasks.
type Stage struct {
	ID, Attempt int
	JobID       int64
	Name        string
	Status      string
	NumTasks    int
	// ParentShuffles are the shuffles the stage reads.
	ParentShuffles []int

	ActiveTasks, CompleteTasks, FailedTasks, KilledTasks, CompletedIndices int

	Submitted, FirstTaskLaunched, Completed time.Time
	FailureReason                           string

	// RunTime sums the tasks' durations; Metrics sums their metrics.
	RunTime            time.Duration
	Metrics            events.TaskMetrics
	KilledTasksSummary map[string]int
}

// Task is one task attempt.
type Task struct {
	ID        int64
	Partition int
	Attempt   int
	Executor  executorid.ID
	// Host is the executor's host, as it registered.
	Host     string
	Launched time.Time
	// Ended is zero while the attempt runs.
	Ended       time.Time
	Duration    time.Duration
	Status      string
	Reason      string
	FetchFailed bool
	Metrics     events.TaskMetrics
}

// StageDetail is a stage attempt with the tasks the store remembers.
type StageDetail struct {
	Stage
	// Tasks are the remembered attempts in launch order (of their ids),
	// or the page of them that Store.StageTasks selected.
	Tasks []Task
	// Remembered counts the attempts the store remembers; Matched those
	// that Store.StageTasks's query selected before paging.
	Remembered, Matched int
	// Failures are the latest failed or killed attempts, oldest first,
	// kept apart so that forgetting tasks does not forget why they failed.
	Failures []Task
	// ForgottenTasks counts the attempts no longer remembered.
	ForgottenTasks int
}

// Executor is one executor, or the driver (executorid.Driver) whose tasks
// run in its own process in local mode.
type Executor struct {
	ID executorid.ID
	// HostPort is where it serves shuffle blocks.
	HostPort string
	Pod      string
	Node     string
	// Phase is its pod's phase as the pod watch last saw it.
	Phase string
	State string
	Cores int
	Added time.Time
	// Removed and RemoveReason are set once the driver dropped it; the
	// reason is the lifecycle manager's words.
	Removed      time.Time
	RemoveReason string
	ExitCode     int

	ActiveTasks, CompletedTasks, FailedTasks, KilledTasks, TotalTasks int
	TaskTime                                                          time.Duration
	InputBytes, ShuffleRead, ShuffleWrite, SpillBytes                 int64
}

// Allocation is what the Kubernetes allocator and dynamic allocation did.
type Allocation struct {
	// Rounds counts the allocator's rounds; zero under a master that starts
	// its executors itself.
	Rounds int64
	// Target, Running, Pending and Gated are the latest round's view.
	Target, Running, Pending, Gated int
	// PodsCreated and CreateErrors count executor pod creates, by outcome;
	// Resent counts creates sent again after a lost answer.
	PodsCreated, CreateErrors, Resent int64
	// DeletedExcess and DeletedLost count the pods the allocator deleted.
	DeletedExcess, DeletedLost int64
	// Waiting is why the latest round did not move towards the target.
	Waiting string
	// Report is the latest round's message for the user, at ReportTime.
	Report     string
	ReportTime time.Time
	// LastRound is the time of the latest round.
	LastRound time.Time
	// RecentRounds are the latest rounds, newest first.
	RecentRounds []events.AllocationRound

	// DynamicTarget is dynamic allocation's latest target (valid when
	// TargetChanges is not empty) and Backlog the tasks then waiting or
	// running.
	DynamicTarget, Backlog int
	// TargetChanges are the latest target changes, newest first.
	TargetChanges []events.TargetChanged

	// ExecutorsRemoved counts executors the driver dropped.
	ExecutorsRemoved int64
}

// Property is one configuration setting.
type Property struct{ Key, Value string }
