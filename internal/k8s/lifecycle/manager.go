package lifecycle

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/scheduler"
)

// Applier carries out a Manager's actions, and tells it which executors the
// scheduler backend has registered.
type Applier interface {
	// Registered returns the registered executors' ids and registration
	// times.
	Registered() map[executorid.ID]time.Time
	// RemoveExecutor tells the scheduler backend an executor is gone. It
	// must accept executors it does not know (never registered, or already
	// removed) and must not block on the Manager.
	RemoveExecutor(id executorid.ID, r scheduler.LossReason)
	// DeletePod deletes an executor pod; a pod already gone is success.
	DeletePod(ctx context.Context, id executorid.ID, name string) error
	// LabelInactive labels an executor pod spark-exec-inactive=true; a pod
	// already gone is success.
	LabelInactive(ctx context.Context, name string) error
	// Warn shows the user a problem with the application's pods.
	Warn(msg string)
	// Fail ends the application with err; it is called at most once.
	Fail(err error)
}

// apiParallelism bounds the pod deletions and label patches in flight.
const apiParallelism = 8

// Manager runs Decide over the snapshots it is given, at most once per
// EventProcessingInterval, and applies the actions.
type Manager struct {
	opts    Options
	applier Applier
	clock   clock.WithTicker
	log     *slog.Logger

	mu sync.Mutex
	// snap is the latest snapshot; dirty says Decide has not seen it, and
	// full that one of the snapshots merged into it came from a full list.
	snap  snapshot.Snapshot
	dirty bool
	full  bool
	// killed holds the executors whose pods the driver deleted, with when
	// it first asked.
	killed map[executorid.ID]time.Time

	// state belongs to the Run goroutine.
	state State
}

// New returns a Manager; nothing runs until Run. A nil clock is the real
// one; a nil logger discards.
func New(o Options, a Applier, clk clock.WithTicker, logger *slog.Logger) *Manager {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		opts:    o,
		applier: a,
		clock:   clk,
		log:     logger,
		killed:  make(map[executorid.ID]time.Time),
	}
}

// OnSnapshot hands the Manager the application's executor pods; fullSync
// says they come from a full list (the informer's relist). Snapshots that
// arrive between two runs of Decide are merged: a pod that was in an
// earlier one and is gone from a later one keeps its final state (or
// becomes Deleted), so no executor's end is lost. OnSnapshot does not
// block on Decide and does not modify s.
func (m *Manager) OnSnapshot(s snapshot.Snapshot, fullSync bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirty {
		s = carry(m.snap, s)
	}
	m.snap = s
	m.full = m.full || fullSync
	m.dirty = true
}

// carry adds to next the pods of prev that next lacks, as Deleted unless
// their state was already final.
func carry(prev, next snapshot.Snapshot) snapshot.Snapshot {
	var pods map[executorid.ID]snapshot.ExecutorPod
	for id, ep := range prev.Pods {
		if _, ok := next.Pods[id]; ok {
			continue
		}
		if pods == nil {
			pods = make(map[executorid.ID]snapshot.ExecutorPod, len(next.Pods)+1)
			maps.Copy(pods, next.Pods)
		}
		if !ep.State.Final() {
			ep.State = snapshot.Deleted
		}
		pods[id] = ep
	}
	if pods != nil {
		next.Pods = pods
	}
	return next
}

// KilledByDriver records that the driver deleted these executors' pods
// itself, so their losses read "deleted by the driver" and do not count as
// failures. Call it before deleting the pods. A pod the latest snapshot
// already shows being deleted or ended is not recorded: someone else was
// first (an executor that leaves on SIGTERM is dropped by the driver, which
// then deletes its pod), and the earlier cause stands. An earlier request
// for the same executor keeps its time.
func (m *Manager) KilledByDriver(ids ...executorid.ID) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		if _, ok := m.killed[id]; ok {
			continue
		}
		if ep, ok := m.snap.Pods[id]; ok && ep.Pod != nil && (ep.Pod.Deleting || ep.State.Final()) {
			continue
		}
		m.killed[id] = now
	}
}

// NotKilledByDriver takes back KilledByDriver for executors whose pods the
// delete missed (an excess delete of Pending pods that had started): they
// run on, and a later end is their own, handled and counted as any.
func (m *Manager) NotKilledByDriver(ids ...executorid.ID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.killed, id)
	}
}

// Run decides and applies every EventProcessingInterval while there is a
// new snapshot or time-based work (pending problems, a start timeout, a
// cleanup to retry), until ctx ends. It returns nil when ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	interval := m.opts.EventProcessingInterval
	if interval <= 0 {
		interval = time.Second
	}
	t := m.clock.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		m.process(ctx)
	}
}

// process runs Decide once if there is anything to decide, and applies its
// actions.
func (m *Manager) process(ctx context.Context) {
	m.mu.Lock()
	if !m.dirty && !m.state.tick {
		m.mu.Unlock()
		return
	}
	snap, full := m.snap, m.full
	m.dirty, m.full = false, false
	killed := maps.Clone(m.killed)
	m.mu.Unlock()

	registered := m.applier.Registered()
	now := m.clock.Now()
	actions := Decide(&m.state, Input{
		Now:              now,
		Snapshot:         snap,
		FullSync:         full,
		Registered:       registered,
		RunningExecutors: len(registered),
		DeletedByDriver:  killed,
	}, m.opts)
	m.apply(ctx, actions)

	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range actions {
		if r, ok := a.(RemoveExecutor); ok {
			delete(m.killed, r.ID)
		}
	}
	for id, at := range m.killed {
		if now.Sub(at) > m.opts.DeletedCacheTimeout {
			delete(m.killed, id)
		}
	}
}

// apply carries out actions in order; pod deletions and labels run
// concurrently, and apply returns when they are done. A failed call is
// logged, unless ctx ended (the application is stopping, and stopping
// deletes its pods): Decide asks again while the pod is still there.
func (m *Manager) apply(ctx context.Context, actions []Action) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, apiParallelism)
	call := func(what, name string, f func(context.Context, string) error) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(ctx, name); err != nil && ctx.Err() == nil {
				m.log.Warn(what+" failed", "pod", name, "err", err)
			}
		})
	}
	for _, a := range actions {
		switch a := a.(type) {
		case RemoveExecutor:
			level := slog.LevelInfo
			if a.Reason.CausedByApp {
				level = slog.LevelWarn
			}
			msg := "executor lost"
			if !a.Registered {
				msg = "executor pod ended before its executor registered"
			}
			m.log.Log(ctx, level, msg, "executor", a.ID,
				"reason", a.Reason.String(), "caused_by_app", a.Reason.CausedByApp)
			m.applier.RemoveExecutor(a.ID, a.Reason)
		case DeletePod:
			call("deleting executor pod", a.Name, func(ctx context.Context, name string) error {
				return m.applier.DeletePod(ctx, a.ID, name)
			})
		case LabelInactive:
			call("labelling executor pod inactive", a.Name, m.applier.LabelInactive)
		case Warn:
			m.applier.Warn(a.Message)
		case FailApplication:
			// The applier reports the application's failure; one error
			// line is enough.
			m.log.Debug("failing the application", "err", a.Err)
			m.applier.Fail(a.Err)
		}
	}
	wg.Wait()
}
