package lifecycle

import (
	"fmt"
	"sort"
	"time"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/scheduler"
)

// Decide maps the pods' states to actions, in executor-id order, followed by
// the warnings and the application's failure. It updates s and depends on
// nothing else: the same state and input give the same actions.
func Decide(s *State, in Input, o Options) []Action {
	s.init()
	d := &decision{s: s, in: in, o: o, now: in.Now}
	for id := range in.Registered {
		s.registered[id] = in.Now
	}
	d.expire()
	for _, id := range d.ids() {
		d.decide(id)
	}
	d.forget()
	d.account()
	d.checkStart()
	s.tick = len(s.problems) > 0 || !s.startSince.IsZero() || d.cleanupPending
	return d.output()
}

// decision is one run of Decide.
type decision struct {
	s   *State
	in  Input
	o   Options
	now time.Time

	actions  []Action
	warnings []warning
	fail     *FailApplication
	// newFailures are this run's executor failures, in id order.
	newFailures []scheduler.LossReason
	// startCause is the last problem, in id order, of a pod that could
	// not start or an executor that failed.
	startCause string
	// alive says a pod runs an executor.
	alive          bool
	cleanupPending bool
}

type warning struct {
	pod, detail string
}

// ids lists, sorted, the executors to look at: those with a pod, those whose
// pod vanished since the previous snapshot and, on a full sync, the
// registered ones.
func (d *decision) ids() []executorid.ID {
	ids := d.in.Snapshot.IDs()
	for id := range d.s.seen {
		if _, ok := d.in.Snapshot.Pods[id]; !ok {
			ids = append(ids, id)
		}
	}
	if d.in.FullSync {
		for id := range d.in.Registered {
			_, present := d.in.Snapshot.Pods[id]
			_, seen := d.s.seen[id]
			if !present && !seen {
				ids = append(ids, id)
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func (d *decision) decide(id executorid.ID) {
	ep, present := d.in.Snapshot.Pods[id]
	if present && ep.Pod == nil {
		return
	}
	if r, ok := d.s.removed[id]; ok {
		if present {
			r.lastSeen = d.now
			d.retryCleanup(r, ep.Pod)
		}
		return
	}
	if !present {
		d.absent(id)
		return
	}
	p := ep.Pod
	if p.Deleting {
		if _, ok := d.s.deleting[id]; !ok {
			d.s.deleting[id] = d.snapshotTime()
		}
	}
	byDriver := d.byDriver(id, p)
	when := d.when(id)
	switch ep.State {
	case snapshot.Deleted:
		if byDriver {
			d.remove(id, killedReason(podRef(id, p), when))
		} else {
			d.remove(id, deletedReason(p, d.o.ContainerName, when))
		}
	case snapshot.Failed, snapshot.Succeeded:
		switch {
		case byDriver:
			d.remove(id, killedReason(podRef(id, p), when))
			d.cleanup(id, p, false)
		case p.Deleting && !oomKilled(p):
			// Deleting a running pod ends its containers with SIGTERM
			// (or SIGKILL after the grace period): the deletion, not the
			// executor, is the cause.
			d.remove(id, deletedReason(p, d.o.ContainerName, when))
		default:
			r, counted := endedReason(p, ep.State == snapshot.Failed, d.o.ContainerName, when)
			d.remove(id, r)
			d.cleanup(id, p, false)
			if counted {
				d.failure(r)
			}
		}
	default:
		_, killed := d.in.DeletedByDriver[id]
		d.active(id, ep, killed)
	}
}

// snapshotTime is when the snapshot was taken, else now.
func (d *decision) snapshotTime() time.Time {
	if t := d.in.Snapshot.Time; !t.IsZero() {
		return t
	}
	return d.now
}

// byDriver says the driver deleted the executor's pod (p is its last state,
// nil if it was never seen): it asked to, no snapshot taken before it asked
// showed the pod being deleted, and the pod's status names no cause of the
// cluster's.
func (d *decision) byDriver(id executorid.ID, p *snapshot.Pod) bool {
	asked, ok := d.in.DeletedByDriver[id]
	if !ok {
		return false
	}
	if seen, ok := d.s.deleting[id]; ok && seen.Before(asked) {
		return false
	}
	return p == nil || !endedByCluster(p)
}

// when says whether the executor had registered when its pod ended.
func (d *decision) when(id executorid.ID) registration {
	_, ok := d.s.registered[id]
	return registration(ok)
}

// absent handles an executor without a pod: one whose pod vanished since
// the previous snapshot, or a registered one a full list lacks.
func (d *decision) absent(id executorid.ID) {
	when := d.when(id)
	if last, ok := d.s.seen[id]; ok {
		if d.byDriver(id, last) {
			d.remove(id, killedReason(podRef(id, last), when))
		} else {
			d.remove(id, deletedReason(last, d.o.ContainerName, when))
		}
		return
	}
	reg, ok := d.in.Registered[id]
	if !ok || !d.in.FullSync {
		return
	}
	at := d.in.Snapshot.Time
	if at.IsZero() {
		at = d.now
	}
	if at.Sub(reg) <= d.o.MissingPodDetectDelta {
		return
	}
	if d.byDriver(id, nil) {
		d.remove(id, killedReason(podRef(id, nil), when))
	} else {
		d.remove(id, missingReason(id, when))
	}
}

// active handles a pending, running or unknown pod: a lost node, or a
// problem that keeps it from starting.
func (d *decision) active(id executorid.ID, ep snapshot.ExecutorPod, killed bool) {
	p := ep.Pod
	if killed {
		delete(d.s.problems, id)
		return
	}
	if prob, ok := nodeLost(p); ok {
		t := d.track(id, prob)
		if d.now.Sub(t.since) >= d.o.grace(ReasonNodeLost) {
			d.remove(id, scheduler.LossReason{Message: loss("pod "+p.Name, "was lost with its node", d.when(id), prob.message),
				Cause: scheduler.CauseNodeLost})
			d.cleanup(id, p, false)
		}
		return
	}
	if ep.State == snapshot.Pending && !p.Deleting {
		if prob, ok := pendingProblem(p); ok {
			d.pending(id, p, prob)
			return
		}
	}
	delete(d.s.problems, id)
	if ep.State == snapshot.Running {
		d.alive = true
	}
}

// pending handles a pod that is not starting: report it, and delete it
// once the problem outlasts its grace period (unschedulable pods wait).
func (d *decision) pending(id executorid.ID, p *snapshot.Pod, prob problem) {
	t := d.track(id, prob)
	grace := d.o.grace(prob.reason)
	elapsed := d.now.Sub(t.since)
	switch {
	case prob.reason == ReasonUnschedulable:
		if elapsed >= grace {
			d.warn(id, p.Name, t, "the pod keeps waiting for a node")
		}
	default:
		d.warn(id, p.Name, t, fmt.Sprintf("the pod will be deleted if this lasts %s", grace))
		if elapsed >= grace {
			r := scheduler.LossReason{Message: loss("pod "+p.Name, "could not start and was deleted by the driver", d.when(id), prob.detail()),
				Cause: scheduler.CauseStartFailed}
			d.remove(id, r)
			d.cleanup(id, p, true)
			d.failure(r)
		}
	}
	d.startCause = prob.cause(p.Name)
}

// track records a pod's current problem, keeping its first-seen time while
// the problem's class stays the same.
func (d *decision) track(id executorid.ID, prob problem) *tracked {
	t := d.s.problems[id]
	if t == nil || t.class != prob.reason.class() {
		t = &tracked{class: prob.reason.class(), since: d.now}
		d.s.problems[id] = t
	}
	t.problem = prob
	return t
}

func (d *decision) warn(id executorid.ID, pod string, t *tracked, what string) {
	k := warnKey{id: id, class: t.class}
	if d.s.warned[k] {
		return
	}
	d.s.warned[k] = true
	d.warnings = append(d.warnings, warning{pod: pod, detail: t.detail() + "; " + what})
}

func (d *decision) remove(id executorid.ID, r scheduler.LossReason) {
	d.actions = append(d.actions, RemoveExecutor{ID: id, Reason: r, Registered: bool(d.when(id))})
	d.s.removed[id] = &removal{lastSeen: d.now}
	delete(d.s.problems, id)
	delete(d.s.deleting, id)
}

// cleanup deletes or labels the pod of a removed executor, unless it is
// already being deleted. force deletes it whatever DeleteOnTermination says.
func (d *decision) cleanup(id executorid.ID, p *snapshot.Pod, force bool) {
	if p.Deleting {
		return
	}
	var a Action = LabelInactive{ID: id, Name: p.Name}
	if d.o.DeleteOnTermination || force {
		a = DeletePod{ID: id, Name: p.Name}
	}
	r := d.s.removed[id]
	r.cleanup, r.attempt = a, d.now
	d.actions = append(d.actions, a)
	d.cleanupPending = true
}

// retryCleanup asks again to delete or label the pod of a removed executor
// when it is still there, unchanged, cleanupRetry after the last request.
func (d *decision) retryCleanup(r *removal, p *snapshot.Pod) {
	if r.cleanup == nil {
		return
	}
	if p.Deleting || p.Inactive {
		r.cleanup = nil
		return
	}
	d.cleanupPending = true
	if d.now.Sub(r.attempt) >= cleanupRetry {
		r.attempt = d.now
		d.actions = append(d.actions, r.cleanup)
	}
}

func (d *decision) failure(r scheduler.LossReason) {
	d.newFailures = append(d.newFailures, r)
	d.startCause = r.String()
}

// expire forgets the removed executors whose pod has been gone for
// DeletedCacheTimeout, and the registrations of executors the backend no
// longer lists whose pod has been gone as long.
// A pod in the previous snapshot counts as seen until now.
func (d *decision) expire() {
	for id, r := range d.s.removed {
		switch {
		case d.hasPod(id):
			r.lastSeen = d.now
		case d.now.Sub(r.lastSeen) > d.o.DeletedCacheTimeout:
			delete(d.s.removed, id)
		}
	}
	for id, last := range d.s.registered {
		switch {
		case d.hasPod(id):
			d.s.registered[id] = d.now
		case d.now.Sub(last) > d.o.DeletedCacheTimeout:
			delete(d.s.registered, id)
		}
	}
}

// hasPod says the executor's pod is in the snapshot or the previous one.
func (d *decision) hasPod(id executorid.ID) bool {
	_, present := d.in.Snapshot.Pods[id]
	_, seen := d.s.seen[id]
	return present || seen
}

// forget drops the problems and reports of pods that are gone, and
// remembers the current pods.
func (d *decision) forget() {
	pods := d.in.Snapshot.Pods
	for id := range d.s.problems {
		if _, ok := pods[id]; !ok {
			delete(d.s.problems, id)
		}
	}
	for id := range d.s.deleting {
		if _, ok := pods[id]; !ok {
			delete(d.s.deleting, id)
		}
	}
	for k := range d.s.warned {
		if _, ok := pods[k.id]; !ok {
			delete(d.s.warned, k)
		}
	}
	clear(d.s.seen)
	for id, ep := range pods {
		if ep.Pod != nil {
			d.s.seen[id] = ep.Pod
		}
	}
}

// account counts this run's executor failures and fails the application
// when those within the validity interval exceed the maximum.
func (d *decision) account() {
	for _, r := range d.newFailures {
		d.s.failures = append(d.s.failures, failure{at: d.now, cause: r.String()})
	}
	if w := d.o.FailuresValidityInterval; w > 0 {
		keep := d.s.failures[:0]
		for _, f := range d.s.failures {
			if d.now.Sub(f.at) <= w {
				keep = append(keep, f)
			}
		}
		d.s.failures = keep
	}
	n, limit := len(d.s.failures), d.o.MaxExecutorFailures
	if d.s.failed || limit <= 0 || n <= limit {
		return
	}
	d.failApp(fmt.Errorf("%w (%d): last failure: %s", ErrTooManyFailures, limit, d.s.failures[n-1].cause))
}

// checkStart fails the application when no executor runs and pods have
// kept failing to start for StartTimeout, with the last cause. A run of
// start failures ends when an executor runs, or after startGap without any.
func (d *decision) checkStart() {
	s := d.s
	if d.isAlive() {
		s.startSince, s.quietSince = time.Time{}, time.Time{}
		return
	}
	if d.startCause == "" {
		if !s.startSince.IsZero() {
			if s.quietSince.IsZero() {
				s.quietSince = d.now
			}
			if d.now.Sub(s.quietSince) > startGap {
				s.startSince, s.quietSince = time.Time{}, time.Time{}
			}
		}
		return
	}
	s.quietSince = time.Time{}
	if s.startSince.IsZero() {
		s.startSince = d.now
	}
	if s.failed || d.o.StartTimeout <= 0 || d.now.Sub(s.startSince) < d.o.StartTimeout {
		return
	}
	d.failApp(fmt.Errorf("%w for %s: %s", ErrStartTimeout, d.o.StartTimeout, d.startCause))
}

// isAlive says an executor runs: a running pod, or one the backend has
// registered and Decide has not removed.
func (d *decision) isAlive() bool {
	if d.alive || d.in.RunningExecutors > 0 {
		return true
	}
	for id := range d.in.Registered {
		if _, removed := d.s.removed[id]; !removed {
			return true
		}
	}
	return false
}

func (d *decision) failApp(err error) {
	d.s.failed = true
	d.fail = &FailApplication{Err: err}
}

// output is the per-executor actions, then the warnings (one per problem
// shared by several pods), then the application's failure.
func (d *decision) output() []Action {
	out := d.actions
	var order []string
	groups := make(map[string][]string)
	for _, w := range d.warnings {
		if _, ok := groups[w.detail]; !ok {
			order = append(order, w.detail)
		}
		groups[w.detail] = append(groups[w.detail], w.pod)
	}
	for _, detail := range order {
		pods := groups[detail]
		msg := fmt.Sprintf("pod %s: %s", pods[0], detail)
		if len(pods) > 1 {
			msg = fmt.Sprintf("pod %s (and %d other pods): %s", pods[0], len(pods)-1, detail)
		}
		out = append(out, Warn{PodName: pods[0], Message: msg})
	}
	if d.fail != nil {
		out = append(out, *d.fail)
	}
	return out
}

// oomKilled reports whether a container of the pod was OOM-killed.
func oomKilled(p *snapshot.Pod) bool {
	for _, cs := range p.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.Reason == containerOOMKilled {
			return true
		}
	}
	return false
}
