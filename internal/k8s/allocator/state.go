package allocator

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// CreateResult is the outcome of one create the loop attempted, or
// ErrNotAttempted for one it skipped.
type CreateResult struct {
	ID  executorid.ID
	Err error
}

// DeleteResult is the outcome of one delete call covering IDs.
type DeleteResult struct {
	IDs []executorid.ID
	Err error
}

// Input is what one round of Decide looks at.
type Input struct {
	Now time.Time
	// Target is the number of executors the application wants.
	Target int
	// Snapshot is the latest state of the application's executor pods.
	Snapshot snapshot.Snapshot
	// Seen holds the executors whose pods changed in any snapshot since
	// the previous round, so a pod that appeared and vanished in between
	// still clears its expectation (Spark merges its batch of snapshots the
	// same way). Every change listed here must be reflected in Snapshot: a
	// pod source that reports a change before the snapshot that holds it
	// would make a live pod look gone, and it would be created again. The
	// ids of Snapshot count as seen without being listed here.
	Seen map[executorid.ID]bool
	// Registered holds the executors the scheduler backend knows now.
	Registered map[executorid.ID]bool
	// CreateResults and DeleteResults are the outcomes of the previous
	// round's plan.
	CreateResults []CreateResult
	DeleteResults []DeleteResult
}

// Plan is what one round decided.
type Plan struct {
	// Create holds executor ids to create, in order: first creates sent
	// again because their outcome was unknown (Resend), then new ones.
	Create []executorid.ID
	// Resend counts the leading ids of Create that are sent again with the
	// same pod name: a previous create of theirs may have been stored.
	Resend int
	// DeleteExcess holds pending pods beyond the target; delete them only
	// while still Pending, so one that started meanwhile keeps running.
	DeleteExcess []executorid.ID
	// DeleteUnseen holds creates beyond the target whose pods were never
	// seen (or whose outcome is in doubt): delete them unconditionally, as
	// such a pod may land after the delete and start at once.
	DeleteUnseen []executorid.ID
	// DeleteLost holds created pods never seen within PodCreationTimeout:
	// the create was lost, or its events were. Delete them unconditionally.
	DeleteLost []executorid.ID
	// Spared holds pods an excess delete missed (they started first): they
	// run on and count, and whatever ends them is not the driver's doing.
	Spared []executorid.ID
	// Fatal, once set, is set in every later plan: the application fails.
	Fatal error
	// Report is a message for the user; the policy decides how often
	// (quota and the id cap once, create failures per failing round).
	Report string
	// NextRound is when to run again at the latest.
	NextRound time.Duration
	// Resume, when > 0, is when a back-off that held this round's creates
	// ends: the loop runs a round then even if that is sooner than
	// BatchDelay, as a round woken during the back-off must not push the
	// retry a whole batch delay past it.
	Resume time.Duration
	// Limit says what holds executors back from the target, if anything
	// does: the user sees it, and the driver stops waiting for them.
	Limit Limit
	// Counts is the state the decision saw, after this round's deletions.
	Counts Counts
}

// Counts splits the application's executors as Spark's allocator does. Pods
// the allocator deleted, and pods in final or unknown states, are not counted.
type Counts struct {
	Target int
	// Running counts Running pods.
	Running int
	// Pending and PendingKnown count Pending pods whose executor has not,
	// and has, registered with the scheduler backend.
	Pending, PendingKnown int
	// Unseen and UnseenKnown count pods created but not yet in a snapshot
	// (Spark's newlyCreatedExecutors and schedulerKnownNewlyCreatedExecs).
	Unseen, UnseenKnown int
	// Gated counts the pending pods a scheduling gate holds (counted in
	// Pending or PendingKnown too); GatedBy names what holds the first:
	// "queue X" for Kueue, else the gate.
	Gated   int
	GatedBy string
}

// Limit is a cap on the executors the allocator can create now.
type Limit struct {
	// Held is how many executors of the target are held back; 0 when
	// nothing holds any.
	Held int
	// Reachable is how many executors the application can have while the
	// cap lasts: the target less Held.
	Reachable int
	// Cause names what holds them: "ResourceQuota pods3", or
	// "spark.kubernetes.allocation.maximum=100".
	Cause string
}

func (l Limit) String() string {
	if l.Held == 0 {
		return ""
	}
	return fmt.Sprintf("%d held back by %s", l.Held, l.Cause)
}

// Waiting says what keeps the application from its target, if anything:
// a cap on creates, else pods a queue has not admitted.
func (p Plan) Waiting() string {
	if s := p.Limit.String(); s != "" {
		return s
	}
	if c := p.Counts; c.Gated > 0 {
		return fmt.Sprintf("%d waiting for queue admission (%s)", c.Gated, c.GatedBy)
	}
	return ""
}

// NotRunning is every counted executor that is not a Running pod.
func (c Counts) NotRunning() int { return c.Pending + c.PendingKnown + c.Unseen + c.UnseenKnown }

// Total is every counted executor: what the target is compared with.
func (c Counts) Total() int { return c.Running + c.NotRunning() }

// State is what the policy remembers between rounds. The zero value is
// ready; it is owned by one loop.
type State struct {
	// lastID is the highest executor id issued; ids start at 1.
	lastID executorid.ID
	// free holds ids issued whose creates surely stored nothing (refused,
	// throttled, not attempted): the next creates take them again, so
	// failures burn no ids.
	free []executorid.ID
	// expect holds the creates not yet seen in a snapshot.
	expect map[executorid.ID]*expectation
	// deleted holds the pods deleted by the allocator, not counted even while
	// the cache still shows them.
	deleted map[executorid.ID]*deletion

	quota         *quotaBlock
	quotaReported bool
	capReported   bool
	fatal         error

	// Adaptive only.
	round      int             // current round size
	lastRound  []executorid.ID // created by the last creating round, awaiting a verdict
	unsched    map[executorid.ID]bool
	failStreak int // consecutive rounds whose creates all failed
	notBefore  time.Time
	// pushedBack: the cluster refused or held a pod once (Unschedulable,
	// held by a queue, a failed create, a quota); rounds start from
	// BatchSize instead of FirstRound from then on.
	pushedBack bool
}

type expectation struct {
	at    time.Time // when the create was last sent
	known bool      // the executor registered before its pod was seen
	// resend: a create's outcome is unknown (timeout, reset, 5xx): the
	// pod may exist. It is sent again with the same name until the API
	// server answers (AlreadyExists means it had been stored) or the pod
	// is seen; meanwhile it counts as an unseen executor, so no new id
	// is minted in its place.
	resend bool
}

type deletion struct {
	at     time.Time
	excess bool // deleted as excess: only while Pending
	// answered: the API server answered the last delete (it deleted what
	// it found). A pod seen alive after that landed later, or was missed:
	// the delete is sent again (reapDeleted).
	answered bool
	retry    bool // the delete call failed; issue it again
}

// quotaBlock stops creation after a quota rejection until the target
// changes, the live executors drop below live, or QuotaRetry has passed
// since at (the quota may have been freed by others or raised, which the
// driver does not see).
type quotaBlock struct {
	target, live int
	cause        string
	at           time.Time
}

// QuotaRetry is how long creation waits after a quota rejection before it
// tries one create again when nothing it sees has changed: refused, the
// block stands another QuotaRetry; admitted, creation goes on.
const QuotaRetry = 30 * time.Second

// Issued reports whether id is an executor id the allocator has handed out.
func (s *State) Issued(id executorid.ID) bool { return id >= 1 && id <= s.lastID }

// IsDeleted reports whether the allocator deleted the executor's pod; such
// an executor must not register.
func (s *State) IsDeleted(id executorid.ID) bool { return s.deleted[id] != nil }
