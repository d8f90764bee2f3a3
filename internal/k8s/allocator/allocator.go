package allocator

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// PodClient creates and deletes executor pods. The Kubernetes backend
// implements it with the executor pod builder and a clientset; it returns
// the API server's errors unwrapped or wrapped with %w, so they classify.
type PodClient interface {
	// CreateExecutorPod creates the pod of executor id.
	CreateExecutorPod(ctx context.Context, id executorid.ID) error
	// DeleteExecutorPods deletes the pods of the given executors. With
	// onlyPending it keeps pods no longer Pending, as Spark's
	// status.phase=Pending field selector does, so an excess pod that started
	// meanwhile is not killed.
	DeleteExecutorPods(ctx context.Context, ids []executorid.ID, onlyPending bool) error
}

// SparingPodClient is a PodClient told of the pods an excess delete missed
// (Plan.Spared), which it had been told were being deleted.
type SparingPodClient interface {
	PodClient
	SparedExecutorPods(ids []executorid.ID)
}

// Allocator runs Decide in a loop and applies its plans. The scheduler
// backend sets the target and the registered executors, the pod informer
// feeds snapshots, and Run does the rest.
type Allocator struct {
	opts   Options
	client PodClient
	clock  clock.WithTicker
	log    *slog.Logger
	// dirty wakes the loop; one pending wake-up is enough because a round
	// reads the latest of everything.
	dirty chan struct{}
	// observe, if set (by tests), sees every plan.
	observe func(Plan)
	// onLimit hears when the cap on the executors changes; onRound sees
	// every plan.
	onLimit   func(Limit)
	onRound   func(Plan)
	events    *events.Bus
	lastLimit Limit

	mu         sync.Mutex
	state      State
	target     int
	snap       snapshot.Snapshot
	haveSnap   bool
	haveTarget bool
	seen       map[executorid.ID]bool
	registered map[executorid.ID]bool
	creates    []CreateResult
	deletes    []DeleteResult
}

// New returns an allocator; Run starts it. A nil logger discards.
func New(o Options, client PodClient, clk clock.WithTicker, logger *slog.Logger) *Allocator {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Allocator{
		opts:   o.withDefaults(),
		client: client,
		clock:  clk,
		log:    logger,
		dirty:  make(chan struct{}, 1),
		seen:   map[executorid.ID]bool{},
	}
}

// OnLimit sets f to hear, from the loop, whenever what holds executors
// back changes (a quota, the id maximum), and when it clears. Call it
// before Run.
func (a *Allocator) OnLimit(f func(Limit)) { a.onLimit = f }

// OnRound sets f to see, from the loop, every round's plan (what waits in
// a queue, for one). f must not block. Call it before Run.
func (a *Allocator) OnRound(f func(Plan)) { a.onRound = f }

// PublishTo makes the allocator publish its rounds and creates to bus.
// Call it before Run.
func (a *Allocator) PublishTo(bus *events.Bus) { a.events = bus }

// SetTarget sets the number of executors the application wants.
func (a *Allocator) SetTarget(n int) {
	a.mu.Lock()
	changed := a.target != n || !a.haveTarget
	a.target, a.haveTarget = n, true
	a.mu.Unlock()
	if changed {
		a.wake()
	}
}

// OnSnapshot hands the allocator the current state of the executor pods
// and the executors whose pods changed since the previous snapshot; neither
// may change afterwards. Every change in touched must be reflected in s (a
// pod that appeared and vanished is in touched, not in s), so a pod is
// never taken as gone before the snapshot that holds it (podsource.Take
// gives both under one lock). No round runs before the first snapshot, so
// feed the synced state first: an empty cache must not look like an empty
// cluster. Nor does one run before the first SetTarget: a round on the
// zero target would decide nothing worth its time (or delete pods as
// excess), and it would hold the first real round back by the least gap
// between rounds.
func (a *Allocator) OnSnapshot(s snapshot.Snapshot, touched map[executorid.ID]bool) {
	a.mu.Lock()
	a.snap, a.haveSnap = s, true
	for id := range s.Pods {
		a.seen[id] = true
	}
	for id := range touched {
		a.seen[id] = true
	}
	a.mu.Unlock()
	a.wake()
}

// SetRegistered replaces the set of executors the scheduler backend
// knows; the allocator keeps ids, which the caller no longer changes.
func (a *Allocator) SetRegistered(ids map[executorid.ID]bool) {
	a.mu.Lock()
	a.registered = ids
	a.mu.Unlock()
}

// IsDeleted reports whether the allocator deleted the executor's pod, so
// the backend refuses its registration.
func (a *Allocator) IsDeleted(id executorid.ID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state.IsDeleted(id)
}

// Issued reports whether the allocator has handed out executor id id: an
// executor registering under another id was not started by this driver.
func (a *Allocator) Issued(id executorid.ID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state.Issued(id)
}

// LastIssued is the highest executor id handed out, 0 before the first:
// every pod the allocator created has an id from 1 to it.
func (a *Allocator) LastIssued() executorid.ID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state.lastID
}

func (a *Allocator) wake() {
	select {
	case a.dirty <- struct{}{}:
	default:
	}
}

// adaptiveGap is the least time between two adaptive rounds: wake-ups
// closer together are coalesced.
const adaptiveGap = 100 * time.Millisecond

// Run allocates until ctx ends (it returns nil) or a create fails for good
// (it returns the *FatalError). Rounds run on wake-ups from SetTarget and
// OnSnapshot and at the latest when the previous plan asked, never less
// than BatchDelay apart.
func (a *Allocator) Run(ctx context.Context) error {
	if err := a.opts.Validate(); err != nil {
		return err
	}
	// Spark's rounds are BatchDelay apart. Adaptive rounds follow the
	// cluster instead: a wake-up (a snapshot in which the last round was
	// admitted, a new target) may run one as soon as adaptiveGap after the
	// last, and the round decides how many pods the cluster can take.
	gap := a.opts.BatchDelay
	if a.opts.Policy != PolicySpark {
		gap = min(gap, adaptiveGap)
	}
	var last time.Time // end of the last round; zero before the first
	next := a.clock.Now()
	for {
		if wait := next.Sub(a.clock.Now()); wait > 0 {
			t := a.clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-a.dirty:
				t.Stop()
				if earliest := last.Add(gap); earliest.Before(next) {
					next = earliest
				}
				continue
			case <-t.C():
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		plan, ran := a.round(ctx)
		if !ran {
			next = a.clock.Now().Add(a.opts.BatchDelay)
			continue
		}
		if plan.Fatal != nil {
			return plan.Fatal
		}
		last = a.clock.Now()
		next = last.Add(max(plan.NextRound, a.opts.BatchDelay))
		if plan.Resume > 0 {
			next = minTime(next, last.Add(max(plan.Resume, gap)))
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// round decides under the lock and applies the plan outside it, so the
// informer and the backend are never blocked on the API server.
func (a *Allocator) round(ctx context.Context) (Plan, bool) {
	start := a.clock.Now()
	a.mu.Lock()
	if !a.haveSnap || !a.haveTarget {
		a.mu.Unlock()
		return Plan{}, false
	}
	in := Input{
		Now:           a.clock.Now(),
		Target:        a.target,
		Snapshot:      a.snap,
		Seen:          a.seen,
		Registered:    a.registered,
		CreateResults: a.creates,
		DeleteResults: a.deletes,
	}
	a.seen, a.creates, a.deletes = map[executorid.ID]bool{}, nil, nil
	plan := Decide(&a.state, in, a.opts)
	a.mu.Unlock()

	if a.observe != nil {
		a.observe(plan)
	}
	if plan.Fatal != nil {
		return plan, true
	}
	a.logPlan(plan)
	if plan.Limit != a.lastLimit {
		a.lastLimit = plan.Limit
		if a.onLimit != nil {
			a.onLimit(plan.Limit)
		}
	}
	if a.onRound != nil {
		a.onRound(plan)
	}
	if sc, ok := a.client.(SparingPodClient); ok && len(plan.Spared) > 0 {
		sc.SparedExecutorPods(plan.Spared)
	}
	deletes := a.delete(ctx, plan)
	creates := a.create(ctx, plan.Create)
	a.publish(plan, creates, start)
	a.mu.Lock()
	a.creates = append(a.creates, creates...)
	a.deletes = append(a.deletes, deletes...)
	a.mu.Unlock()
	return plan, true
}

func (a *Allocator) logPlan(p Plan) {
	c := p.Counts
	if p.Report != "" {
		a.log.Warn(p.Report)
	}
	if len(p.DeleteLost) > 0 {
		a.log.Warn("executor pods not seen since their creation; deleting them: the creation or its events may have been lost",
			"executors", p.DeleteLost, "timeout", a.opts.PodCreationTimeout)
	}
	if excess := slices.Concat(p.DeleteUnseen, p.DeleteExcess); len(excess) > 0 {
		a.log.Info("deleting excess executor pod requests", "executors", excess, "target", c.Target)
	}
	if len(p.Create) > 0 {
		a.log.Info("requesting executor pods", "count", len(p.Create), "target", c.Target,
			"running", c.Running, "pending", c.Pending+c.PendingKnown, "unseen", c.Unseen+c.UnseenKnown)
	}
}

func (a *Allocator) delete(ctx context.Context, p Plan) []DeleteResult {
	var rs []DeleteResult
	for _, d := range []struct {
		ids         []executorid.ID
		onlyPending bool
		reason      string
	}{{p.DeleteLost, false, events.DeleteLost}, {p.DeleteUnseen, false, events.DeleteExcess}, {p.DeleteExcess, true, events.DeleteExcess}} {
		if len(d.ids) == 0 {
			continue
		}
		err := a.client.DeleteExecutorPods(ctx, d.ids, d.onlyPending)
		if err != nil {
			a.log.Warn("deleting executor pods failed; retrying in the next round", "executors", d.ids, "err", err)
		}
		rs = append(rs, DeleteResult{IDs: d.ids, Err: err})
		if a.events != nil {
			for _, id := range d.ids {
				e := &events.PodDeleted{Executor: id, Reason: d.reason}
				if err != nil {
					e.Err = err.Error()
				}
				a.events.Publish(e)
			}
		}
	}
	return rs
}

// create creates the pods with at most CreateConcurrency in flight and, like
// the Job controller's slow start, attempts no more once one has failed.
func (a *Allocator) create(ctx context.Context, ids []executorid.ID) []CreateResult {
	rs := make([]CreateResult, len(ids))
	for i, id := range ids {
		rs[i] = CreateResult{ID: id, Err: ErrNotAttempted}
	}
	// A few workers take the ids in order, rather than a goroutine per
	// pod: building and sending a pod grows a goroutine's stack, which a
	// worker then keeps for the rest of the round.
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(a.opts.CreateConcurrency, len(ids)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ids) || failed.Load() || ctx.Err() != nil {
					return
				}
				id := ids[i]
				err := a.client.CreateExecutorPod(ctx, id)
				created := &events.PodCreated{Executor: id}
				if err != nil {
					created.Err = err.Error()
				}
				a.events.Publish(created)
				if classify(err) != classOK {
					failed.Store(true)
					a.log.Debug("creating executor pod failed", "executor", id, "err", err)
				}
				rs[i].Err = err
			}
		})
	}
	wg.Wait()
	return rs
}

// publish tells the event stream what a round saw and did.
func (a *Allocator) publish(p Plan, creates []CreateResult, start time.Time) {
	if a.events == nil {
		return
	}
	c := p.Counts
	e := &events.AllocationRound{Target: c.Target, Running: c.Running, Pending: c.NotRunning(), Gated: c.Gated,
		Created: len(p.Create) - p.Resend, Resent: p.Resend, DeletedExcess: len(p.DeleteUnseen) + len(p.DeleteExcess), DeletedLost: len(p.DeleteLost),
		Waiting: p.Waiting(), Report: p.Report, Latency: a.clock.Since(start)}
	for _, r := range creates {
		if r.Err != nil && !errors.Is(r.Err, ErrNotAttempted) {
			e.CreateErrors++
		}
	}
	a.events.Publish(e)
}
