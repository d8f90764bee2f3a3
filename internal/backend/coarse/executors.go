package coarse

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/scheduler"
)

// The executor registry: removals, expiry, the start-up wait and what the
// driver reads of its executors.

// Decommissioned is the loss message of an executor that left on its own
// after a decommission (SIGTERM to its process, or the driver's request).
const Decommissioned = "executor decommissioned"

// disconnected handles the end of an executor's control stream. The cluster
// manager, if it can, says why the executor went away; that decides whether
// its running tasks count as failed.
func (b *Backend) disconnected(ex *executorData, err error) {
	b.mu.Lock()
	current := b.executors[ex.ID] == ex
	stopped := b.stopped
	decom := ex.decommissioning
	ex.disabled = true
	b.mu.Unlock()
	if !current || stopped {
		return
	}
	reason := scheduler.LossReason{Message: "executor disconnected", Cause: scheduler.CauseDisconnected}
	if err != nil {
		reason.Message = fmt.Sprintf("executor disconnected: %v", err)
	}
	if decom {
		reason = scheduler.LossReason{Message: Decommissioned, Cause: scheduler.CauseDecommissioned}
	}
	if b.cluster == nil || decom {
		b.lose(ex.ID, reason)
		return
	}
	b.goTracked(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, exitReasonWait)
		defer cancel()
		if r, ok := b.cluster.ExitReason(ctx, ex.ID); ok {
			reason = r
		}
		b.lose(ex.ID, reason)
	})
}

// exitReasonWait bounds the wait for the cluster manager to say why an
// executor's connection ended: pod events usually tell within a second.
const exitReasonWait = 10 * time.Second

// RemoveExecutor forgets an executor, resubmits its running tasks and keeps
// it from registering again. Cluster managers call it for removals they
// decided (a pod that ended, a kill); the backend does not call them back.
func (b *Backend) RemoveExecutor(id executorid.ID, reason scheduler.LossReason) { b.remove(id, reason) }

// lose removes an executor the backend found gone by itself and, if it was
// still registered, tells the cluster manager (ExecutorLost). One the
// cluster manager removed first (it saw the pod end) is not reported back.
func (b *Backend) lose(id executorid.ID, reason scheduler.LossReason) {
	if b.remove(id, reason) && b.cluster != nil {
		b.cluster.ExecutorLost(id, reason)
	}
}

// remove forgets an executor and reports whether it was registered.
func (b *Backend) remove(id executorid.ID, reason scheduler.LossReason) bool {
	b.mu.Lock()
	ex := b.executors[id]
	b.excluded.add(id)
	if ex != nil {
		delete(b.executors, id)
		b.totalCores -= ex.TotalCores
		ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_Shutdown{Shutdown: &pb.Shutdown{Reason: reason.String()}}})
		ex.out.close()
		if ex.fetchConn != nil {
			_ = ex.fetchConn.Close()
		}
	}
	b.mu.Unlock()
	if ex == nil {
		return false
	}
	b.log.Info("executor removed", "executor", id, "reason", reason.String(), "caused_by_app", reason.CausedByApp)
	b.opts.Events.Publish(&events.ExecutorRemoved{Executor: id, Reason: reason.Message, ExitCode: reason.ExitCode,
		CausedByApp: reason.CausedByApp, Cause: reason.Cause})
	b.changed()
	b.sched.ExecutorLost(id, reason)
	return true
}

func (b *Backend) changed() {
	if b.opts.OnExecutorsChanged != nil {
		b.opts.OnExecutorsChanged()
	}
}

// ExcludeExecutor keeps an executor id from registering, for executors whose
// pod or process the cluster manager deleted before they registered.
func (b *Backend) ExcludeExecutor(id executorid.ID) {
	b.mu.Lock()
	b.excluded.add(id)
	b.mu.Unlock()
}

// expiryLoop removes executors the driver has not heard from for
// spark.network.timeout, checking every spark.network.timeoutInterval.
func (b *Backend) expiryLoop() {
	t := b.opts.Clock.NewTicker(b.opts.TimeoutInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stopCh:
			return
		case <-t.C():
		}
		b.ExpireDeadExecutors()
	}
}

// ExpireDeadExecutors removes the executors whose last message is older
// than spark.network.timeout.
func (b *Backend) ExpireDeadExecutors() {
	now := b.opts.Clock.Now()
	b.mu.Lock()
	last := make(map[executorid.ID]time.Time, len(b.executors))
	for id, ex := range b.executors {
		last[id] = time.Unix(0, ex.lastSeen.Load())
	}
	b.mu.Unlock()
	for _, id := range Expired(last, now, b.opts.NetworkTimeout) {
		b.lose(id, scheduler.LossReason{
			Message: fmt.Sprintf("executor heartbeat timed out after %s (spark.network.timeout)", b.opts.NetworkTimeout),
			Cause:   scheduler.CauseHeartbeatTimeout,
		})
	}
}

// Expired returns, sorted, the executors last heard from more than timeout
// before now.
func Expired(lastSeen map[executorid.ID]time.Time, now time.Time, timeout time.Duration) []executorid.ID {
	var ids []executorid.ID
	for id, t := range lastSeen {
		if now.Sub(t) > timeout {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func sufficient(registered, initial int, ratio float64) bool {
	return float64(registered) >= float64(initial)*ratio
}

// WaitReady blocks until enough executors registered
// (spark.scheduler.minRegisteredResourcesRatio of what can be created) or until
// spark.scheduler.maxRegisteredResourcesWaitingTime has passed.
func (b *Backend) WaitReady(ctx context.Context) error {
	timeout := b.opts.Clock.After(b.opts.MaxRegisteredWait)
	for {
		b.mu.Lock()
		wanted := b.opts.InitialExecutors
		if b.reachable >= 0 {
			wanted = min(wanted, b.reachable)
		}
		ok := sufficient(len(b.executors), wanted, b.opts.MinRegisteredRatio)
		ch, capped := b.registered, b.capped
		n := len(b.executors)
		b.mu.Unlock()
		if ok {
			if wanted < b.opts.InitialExecutors {
				b.log.Info("starting without all executors: the cluster manager cannot create more for now",
					"registered", n, "wanted", b.opts.InitialExecutors, "reachable", wanted)
			}
			return nil
		}
		select {
		case <-capped:
		case <-ch:
		case <-timeout:
			b.log.Info("starting without all executors: spark.scheduler.maxRegisteredResourcesWaitingTime passed",
				"registered", n, "wanted", b.opts.InitialExecutors)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// LimitExecutors tells WaitReady how many executors the cluster manager
// can have for now (a quota, an id maximum), so it stops waiting for
// registrations that cannot come; n < 0 lifts the limit.
func (b *Backend) LimitExecutors(n int) {
	b.mu.Lock()
	b.reachable = n
	close(b.capped)
	b.capped = make(chan struct{})
	b.mu.Unlock()
}

// DefaultParallelism is spark.default.parallelism or the registered cores.
func (b *Backend) DefaultParallelism() int {
	if b.opts.DefaultParallelism > 0 {
		return b.opts.DefaultParallelism
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.totalCores, 2)
}

// Registered returns the registered executors' ids with their registration
// times.
func (b *Backend) Registered() map[executorid.ID]time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[executorid.ID]time.Time, len(b.executors))
	for id, ex := range b.executors {
		out[id] = ex.registeredAt
	}
	return out
}

// RegisteredIDs returns the set of registered executors' ids, a new map
// the caller owns.
func (b *Backend) RegisteredIDs() map[executorid.ID]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[executorid.ID]bool, len(b.executors))
	for id := range b.executors {
		out[id] = true
	}
	return out
}

// ExecutorIDs lists the registered executors' ids, sorted.
func (b *Backend) ExecutorIDs() []executorid.ID {
	infos := b.Executors()
	ids := make([]executorid.ID, len(infos))
	for i, e := range infos {
		ids[i] = e.ID
	}
	return ids
}

// Executors lists the registered executors, sorted by id.
func (b *Backend) Executors() []ExecutorInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]ExecutorInfo, 0, len(b.executors))
	for _, ex := range b.executors {
		out = append(out, ex.ExecutorInfo)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
