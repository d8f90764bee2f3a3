package events

import (
	"time"

	"github.com/drover-project/drover/internal/executorid"
)

// Event is one thing that happened in the application.
type Event interface {
	// header is the part every event has; it also keeps the set of
	// events to this package, so the event log can name each one.
	header() *Header
}

// Header is what every event carries.
type Header struct {
	// Time is when the event happened; the bus stamps its clock's time on
	// an event published without one.
	Time time.Time
}

func (h *Header) header() *Header { return h }

// TimeOf is when e happened.
func TimeOf(e Event) time.Time { return e.header().Time }

// AppStart is the first event of an application.
type AppStart struct {
	Header
	AppID, Name, Master, User string
	// DeployMode is client or cluster.
	DeployMode string
	// Conf is the configuration, its secrets redacted.
	Conf map[string]string
	// DriverHost is where the driver runs (its pod's name on Kubernetes).
	DriverHost string
	// AttemptID is the driver's attempt, as Spark's "App Attempt ID": "1"
	// for the first process of a driver that restarts in its pod
	// (spark.kubernetes.driver.restartPolicy=OnFailure), "2" for the one
	// the kubelet starts after it, and so on; every attempt has the same
	// AppID. Empty for a driver that cannot restart: it has no attempts,
	// and its log and history show none.
	AttemptID string `json:"App Attempt ID,omitempty"`
}

// AppEnd is the last event of an application; Err is empty on success.
type AppEnd struct {
	Header
	Err string
}

// JobStart is an action's start: count, collect, save…
type JobStart struct {
	Header
	JobID int64
	// Name says what the action is ("count", "saveAsTextFile s3://b/out").
	Name string
}

// JobEnd is an action's end; Err is empty on success.
type JobEnd struct {
	Header
	JobID int64
	Err   string
}

// StageSubmitted is a stage attempt whose tasks were handed to the
// task scheduler.
type StageSubmitted struct {
	Header
	JobID          int64
	StageID        int
	Attempt        int
	Name           string
	NumTasks       int
	ParentShuffles []int `json:",omitempty"`
}

// StageCompleted ends a stage attempt; Err is empty on success.
type StageCompleted struct {
	Header
	StageID int
	Attempt int
	Err     string `json:",omitempty"`
}

// TaskStart is a task attempt sent to an executor.
type TaskStart struct {
	Header
	TaskID       int64
	StageID      int
	StageAttempt int `json:",omitempty"`
	Partition    int
	Attempt      int `json:",omitempty"`
	Executor     executorid.ID
}

// Task end states, as Spark's REST API words them.
const (
	TaskSuccess = "SUCCESS"
	TaskFailed  = "FAILED"
	TaskKilled  = "KILLED"
)

// TaskEnd is a task attempt's end.
type TaskEnd struct {
	Header
	TaskID       int64
	StageID      int
	StageAttempt int `json:",omitempty"`
	Partition    int
	Attempt      int `json:",omitempty"`
	Executor     executorid.ID
	// Launch is set when the attempt's TaskStart was not published on
	// its own: the scheduler holds a start back for a moment and sends a
	// task that ends by then as this one event, and an event log records
	// an attempt whose start and end fell between two of its flushes on
	// one line. It is the TaskStart's time: a consumer handles that
	// TaskStart before the TaskEnd (SplitTaskEnd builds it).
	Launch time.Time `json:",omitzero"`
	// State is TaskSuccess, TaskFailed or TaskKilled.
	State string
	// Reason is why the attempt failed or was killed.
	Reason      string `json:",omitempty"`
	FetchFailed bool   `json:",omitempty"`
	// Duration is the task's run time as its executor measured it; 0 for
	// an attempt lost with its executor.
	Duration time.Duration
	Metrics  TaskMetrics
}

// TaskMetrics is what an executor measured while running a task.
type TaskMetrics struct {
	ResultBytes         int64 `json:",omitempty"`
	InputBytes          int64 `json:",omitempty"`
	InputRecords        int64 `json:",omitempty"`
	OutputBytes         int64 `json:",omitempty"`
	OutputRecords       int64 `json:",omitempty"`
	ShuffleReadBytes    int64 `json:",omitempty"`
	ShuffleReadRecords  int64 `json:",omitempty"`
	ShuffleWriteBytes   int64 `json:",omitempty"`
	ShuffleWriteRecords int64 `json:",omitempty"`
	// SpillBytes is what the task wrote to disk because it ran out of
	// memory (Spark's diskBytesSpilled).
	SpillBytes int64 `json:",omitempty"`
}

// Add adds o's counts to m's.
func (m *TaskMetrics) Add(o TaskMetrics) {
	m.ResultBytes += o.ResultBytes
	m.InputBytes += o.InputBytes
	m.InputRecords += o.InputRecords
	m.OutputBytes += o.OutputBytes
	m.OutputRecords += o.OutputRecords
	m.ShuffleReadBytes += o.ShuffleReadBytes
	m.ShuffleReadRecords += o.ShuffleReadRecords
	m.ShuffleWriteBytes += o.ShuffleWriteBytes
	m.ShuffleWriteRecords += o.ShuffleWriteRecords
	m.SpillBytes += o.SpillBytes
}

// ExecutorAdded is an executor that registered with the driver.
type ExecutorAdded struct {
	Header
	Executor executorid.ID
	// Address is where the executor serves shuffle blocks (host:port).
	Address string
	// Pod is its pod's name on Kubernetes.
	Pod   string `json:",omitempty"`
	Cores int
}

// ExecutorRemoved is an executor the driver dropped, with why.
type ExecutorRemoved struct {
	Header
	Executor executorid.ID
	// Reason is the loss reason as the cluster manager words it.
	Reason      string
	ExitCode    int  `json:",omitempty"`
	CausedByApp bool `json:",omitempty"`
	// Cause is the kind of loss in one word (scheduler.CauseKilled,
	// CauseOOMKilled…), for metrics and filters.
	Cause string `json:",omitempty"`
}

// ExecutorPlaced is where the cluster put an executor's pod, and its
// phase, as the pod watch last saw it.
type ExecutorPlaced struct {
	Header
	Executor executorid.ID
	Pod      string
	Node     string `json:",omitempty"`
	Phase    string
}

// AllocationRound is one round of the Kubernetes allocator: what it saw and
// what it decided.
type AllocationRound struct {
	Header
	Target  int
	Running int
	// Pending counts created pods not running yet (seen or not); Gated
	// those of them held by a scheduling gate.
	Pending int
	Gated   int `json:",omitempty"`
	// Created and Resent count the creates the round sent; DeletedExcess
	// and DeletedLost the pods it deleted.
	Created       int `json:",omitempty"`
	Resent        int `json:",omitempty"`
	DeletedExcess int `json:",omitempty"`
	DeletedLost   int `json:",omitempty"`
	// CreateErrors counts the round's creates that failed.
	CreateErrors int `json:",omitempty"`
	// Waiting says why the allocator does not move towards the target,
	// when something holds it ("ResourceQuota pods3").
	Waiting string `json:",omitempty"`
	// Report is the round's message for the user, if any.
	Report string `json:",omitempty"`
	// Latency is how long the round took, its API calls included.
	Latency time.Duration
}

// PodCreated is the outcome of one executor pod create.
type PodCreated struct {
	Header
	Executor executorid.ID
	// Err is empty when the API server stored the pod.
	Err string `json:",omitempty"`
}

// PodDeleted is an executor pod the driver asked the API server to delete.
type PodDeleted struct {
	Header
	Executor executorid.ID
	// Pod is the pod's name, when the deleter knows it.
	Pod string `json:",omitempty"`
	// Reason is why the driver deleted it: one of the Delete constants.
	Reason string
	// Err is empty when the API server accepted the deletion.
	Err string `json:",omitempty"`
}

// Why the driver deletes executor pods (PodDeleted.Reason).
const (
	// DeleteExcess: the allocator deleted a pod that was not running
	// while the application had more executors than its target.
	DeleteExcess = "excess"
	// DeleteLost: the allocator gave up on a create no snapshot showed
	// within spark.kubernetes.allocation.podCreationTimeout.
	DeleteLost = "lost"
	// DeleteEnded: the lifecycle manager deleted the pod of an executor
	// that ended or could not start.
	DeleteEnded = "ended"
	// DeleteKilled: the driver killed the executor (dynamic allocation
	// removing an idle executor).
	DeleteKilled = "killed"
	// DeleteUnresponsive: the backend dropped the executor (its
	// connection ended or its heartbeats stopped) and no pod event said
	// why.
	DeleteUnresponsive = "unresponsive"
)

// TargetChanged is a new number of executors the application wants, from
// dynamic allocation.
type TargetChanged struct {
	Header
	Target int
	// Backlog is the number of tasks pending and running then.
	Backlog int
	// Reason is the policy's why ("backlog for 1s", "idle").
	Reason string `json:",omitempty"`
}

// Apart returns what e stands for: a TaskEnd with its Launch time as its
// TaskStart and a copy of it without (SplitTaskEnd), any other event
// alone. It allocates; it is for consumers that count starts, not the
// task path.
func Apart(e Event) []Event {
	if te, ok := e.(*TaskEnd); ok && !te.Launch.IsZero() {
		c := *te
		return []Event{SplitTaskEnd(&c), &c}
	}
	return []Event{e}
}

// SplitTaskEnd returns the TaskStart of an event log's line that recorded
// a task's start and end in one (e.Launch set), and clears e.Launch; nil
// for a plain TaskEnd.
func SplitTaskEnd(e *TaskEnd) *TaskStart {
	if e.Launch.IsZero() {
		return nil
	}
	s := &TaskStart{Header: Header{Time: e.Launch}, TaskID: e.TaskID, StageID: e.StageID, StageAttempt: e.StageAttempt,
		Partition: e.Partition, Attempt: e.Attempt, Executor: e.Executor}
	e.Launch = time.Time{}
	return s
}
