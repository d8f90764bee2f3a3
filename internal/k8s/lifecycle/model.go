package lifecycle

import (
	"errors"
	"time"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/scheduler"
)

// What Decide works with: its options, its input, the actions it returns and
// the state it keeps between calls.

// Options configures the lifecycle policy. The zero value is usable but
// checks nothing time-based; [DefaultOptions] has Spark's and drover's
// defaults.
type Options struct {
	// ContainerName is the executor's container in the pod; "" means the
	// pod's first container.
	ContainerName string
	// DeleteOnTermination deletes the pods of ended executors; false labels
	// them spark-exec-inactive=true instead, so they stay for inspection and
	// drop out of the application's watch
	// (spark.kubernetes.executor.deleteOnTermination). Pods that could not
	// start are deleted either way: kept, they would hold their node's
	// resources and their quota for as long as the application runs.
	DeleteOnTermination bool
	// MaxExecutorFailures fails the application when more executors than
	// this fail within FailuresValidityInterval
	// (spark.executor.maxNumFailures; Spark's default is
	// max(3, 2 × executors)). 0 or less disables the check.
	MaxExecutorFailures int
	// FailuresValidityInterval is how long a failure counts
	// (spark.executor.failuresValidityInterval); 0 means forever.
	FailuresValidityInterval time.Duration
	// MissingPodDetectDelta is how long after its registration an executor
	// whose pod a full list does not contain is removed
	// (spark.kubernetes.executor.missingPodDetectDelta).
	MissingPodDetectDelta time.Duration
	// DeletedCacheTimeout is how long a removed executor is remembered
	// after its pod was last seen, so it is removed once
	// (spark.kubernetes.executor.deletedExecutorsCacheTimeout).
	DeletedCacheTimeout time.Duration
	// StartTimeout fails the application when no executor runs and pods
	// have kept failing to start for this long
	// (drover.kubernetes.executor.startTimeout); 0 disables it.
	StartTimeout time.Duration
	// PendingGrace is how long each problem must last before drover acts
	// on it; reasons it lacks get DefaultPendingGrace's value.
	PendingGrace map[Reason]time.Duration
	// EventProcessingInterval is the least time between two runs of
	// Decide by a Manager (spark.kubernetes.executor.eventProcessingInterval);
	// 0 means 1s.
	EventProcessingInterval time.Duration
}

// DefaultOptions returns Spark's defaults, and drover's for what Spark
// lacks. MaxExecutorFailures is Spark's floor; the caller computes the
// real default from the number of executors.
func DefaultOptions() Options {
	return Options{
		DeleteOnTermination:     true,
		MaxExecutorFailures:     3,
		MissingPodDetectDelta:   30 * time.Second,
		DeletedCacheTimeout:     3 * time.Minute,
		StartTimeout:            5 * time.Minute,
		PendingGrace:            DefaultPendingGrace(),
		EventProcessingInterval: time.Second,
	}
}

func (o Options) grace(r Reason) time.Duration {
	if d, ok := o.PendingGrace[r]; ok {
		return d
	}
	return defaultGrace[r]
}

// The causes of a FailApplication, for errors.Is.
var (
	// ErrTooManyFailures: executor failures exceeded
	// spark.executor.maxNumFailures.
	ErrTooManyFailures = errors.New("exceeded spark.executor.maxNumFailures")
	// ErrStartTimeout: no executor could start for StartTimeout.
	ErrStartTimeout = errors.New("no executor could start")
)

// Input is what Decide sees at one moment.
type Input struct {
	Now time.Time
	// Snapshot is the application's executor pods as the informer's cache
	// has them: a pod missing from it was deleted.
	Snapshot snapshot.Snapshot
	// FullSync says the snapshot comes from a full list (the informer's
	// relist), so a registered executor it lacks has no pod.
	FullSync bool
	// Registered maps the ids of the executors the scheduler backend has
	// registered to their registration times. The backend forgets an
	// executor when it removes it, often before the pod's end reaches the
	// snapshot: State remembers the ids it saw here until their pods are
	// gone for DeletedCacheTimeout, so a loss still says the executor had
	// registered.
	Registered map[executorid.ID]time.Time
	// RunningExecutors is how many executors the backend considers alive.
	// With Registered and the snapshot's running pods it tells whether any
	// executor runs: the start timeout only fails an application that has
	// none.
	RunningExecutors int
	// DeletedByDriver maps the executors whose pods the driver deleted
	// itself (dynamic allocation, excess pending pods, executors the
	// backend dropped) to when it asked. Their losses read "deleted by the
	// driver" and are never failures, unless someone else was first: the
	// pod was seen being deleted in a snapshot taken before the driver
	// asked, or its status names a cause of the cluster's (a
	// DisruptionTarget condition, an eviction, a lost node).
	DeletedByDriver map[executorid.ID]time.Time
}

// Action is one thing Decide asks the caller to do: a [RemoveExecutor],
// [DeletePod], [LabelInactive], [Warn] or [FailApplication].
type Action interface{ isAction() }

// RemoveExecutor tells the scheduler backend an executor is gone and why.
// Registered says whether the executor had registered with the driver
// (Reason's message says it too).
type RemoveExecutor struct {
	ID         executorid.ID
	Reason     scheduler.LossReason
	Registered bool
}

// DeletePod deletes an executor's pod.
type DeletePod struct {
	ID   executorid.ID
	Name string
}

// LabelInactive labels an executor's pod spark-exec-inactive=true, which
// takes it out of the application's watch but leaves it in the cluster.
type LabelInactive struct {
	ID   executorid.ID
	Name string
}

// Warn tells the user about a problem with a pod. Each pod's problem is
// reported once; pods with the same problem in one Decide share a message.
type Warn struct {
	PodName string
	Message string
}

// FailApplication ends the application: Err wraps ErrTooManyFailures or
// ErrStartTimeout and names the last cause. It is emitted once.
type FailApplication struct {
	Err error
}

func (RemoveExecutor) isAction()  {}
func (DeletePod) isAction()       {}
func (LabelInactive) isAction()   {}
func (Warn) isAction()            {}
func (FailApplication) isAction() {}

// startGap is how long without any pod failing to start ends a run of
// start failures: pods that fail are deleted and replaced, and the
// replacements look healthy for the seconds before they fail in turn.
const startGap = time.Minute

// cleanupRetry is how long after asking to delete or label a pod Decide
// asks again if the pod is still there unchanged (the call failed, or its
// effect never reached the cache).
const cleanupRetry = 30 * time.Second

// State is what Decide remembers between calls. The zero value is ready to
// use; it is not safe for concurrent use.
type State struct {
	// removed holds the executors already removed, until
	// DeletedCacheTimeout after their pod was last seen.
	removed map[executorid.ID]*removal
	// seen is the pods of the previous snapshot, to name the cause when one
	// vanishes.
	seen map[executorid.ID]*snapshot.Pod
	// registered holds the executors seen in Input.Registered, with when
	// they were last registered or had a pod: the backend forgets an
	// executor it removes, and its pod's end may come later. An entry is
	// dropped DeletedCacheTimeout after both ended.
	registered map[executorid.ID]time.Time
	// deleting holds when a pod was first seen with a deletionTimestamp
	// (the time of the snapshot that showed it), until the executor is
	// removed or the pod is gone: a deletion seen before the driver asked
	// for one was not the driver's.
	deleting map[executorid.ID]time.Time
	// problems holds the problem each pod has, with when it was first seen.
	problems map[executorid.ID]*tracked
	// warned holds the pods and problems already reported.
	warned map[warnKey]bool
	// failures holds the executor failures within the validity interval.
	failures []failure
	// startSince is when the current run of start failures began, with no
	// executor running; quietSince is when Decide last began to see none.
	startSince, quietSince time.Time
	// failed says the application's failure was decided.
	failed bool
	// tick says Decide has time-based work even with no new snapshot.
	tick bool
}

type removal struct {
	lastSeen time.Time
	// cleanup is the DeletePod or LabelInactive asked for, nil when none
	// is needed any more; attempt is when it was last asked for.
	cleanup Action
	attempt time.Time
}

type tracked struct {
	problem
	class Reason
	since time.Time
}

type warnKey struct {
	id    executorid.ID
	class Reason
}

type failure struct {
	at    time.Time
	cause string
}

// ExecutorFailures is the number of executor failures that counted at the
// last Decide.
func (s *State) ExecutorFailures() int { return len(s.failures) }

func (s *State) init() {
	if s.removed == nil {
		s.removed = make(map[executorid.ID]*removal)
		s.seen = make(map[executorid.ID]*snapshot.Pod)
		s.registered = make(map[executorid.ID]time.Time)
		s.deleting = make(map[executorid.ID]time.Time)
		s.problems = make(map[executorid.ID]*tracked)
		s.warned = make(map[warnKey]bool)
	}
}
