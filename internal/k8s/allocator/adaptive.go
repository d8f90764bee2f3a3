package allocator

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// adaptiveRound is how many executors the adaptive policy requests now. It
// learns the round size from the cluster: double it after a round whose
// pods were all observed and scheduled, halve it when pods turn out
// Unschedulable or creates fail, and start again once the target is
// reached. Pending pods are capped at MaxPendingPods, or at max(floor,
// running executors), so a cluster that does not start pods is not flooded
// with more.
//
// Rounds start at, and the floor is, FirstRound until the cluster first
// pushes back, and BatchSize from then on: a small application gets all its
// pods in one round, as fast as parallel creates, while a cluster that
// cannot start pods holds at most FirstRound of them before the careful
// ramp takes over.
func (s *State) adaptiveRound(in Input, c Counts, r roundResult, o Options, p *Plan) int {
	if s.round == 0 {
		s.round = s.startRound(o)
	}
	switch {
	case r.transientN > 0 && r.ok == 0:
		// Quota rejections wait for a pod to end instead (Decide).
		s.failStreak++
		s.notBefore = in.Now.Add(backoff(s.failStreak, o))
	case r.ok > 0:
		s.failStreak = 0
		s.notBefore = in.Now
	}

	unsched := map[executorid.ID]bool{}
	fresh := false
	for id, ep := range in.Snapshot.Pods {
		if ep.State == snapshot.Pending && s.deleted[id] == nil && unschedulable(ep.Pod) {
			unsched[id] = true
			fresh = fresh || !s.unsched[id]
		}
	}
	s.unsched = unsched
	if r.failed > 0 || len(unsched) > 0 || o.Gang == 0 && c.Gated > 0 {
		s.pushedBack = true
	}

	need := in.Target - c.Total()
	switch {
	case need <= 0:
		s.round, s.lastRound = s.startRound(o), nil
		return 0
	case r.failed > 0 || fresh:
		s.round, s.lastRound = max(1, s.round/2), nil
	case len(unsched) == 0 && len(s.lastRound) > 0 && s.admitted(in, o.Gang > 0):
		s.round, s.lastRound = min(2*s.round, max(need, o.BatchSize)), nil
	}

	if wait := s.notBefore.Sub(in.Now); wait > 0 {
		p.NextRound, p.Resume = max(p.NextRound, wait), wait
		return 0
	}
	// Executors the scheduler backend knows run, whatever the cache says.
	running := c.Running + c.PendingKnown + c.UnseenKnown
	// The cap counts the pods the cluster has not admitted yet: unseen, or
	// pending without a node. A bound pod that is still starting (pulling
	// its image, a slow node) is the kubelet's; the lifecycle manager
	// catches those that never start (drover.kubernetes.executor.startTimeout).
	pending := c.Unseen + s.unbound(in)
	limit := o.MaxPendingPods
	if limit == 0 {
		limit = max(s.startRound(o), running, o.Gang)
	}
	return max(0, min(s.round, need, limit-pending))
}

// startRound is the size of a ramp's first round, and the pending floor:
// FirstRound while the cluster has taken every pod it was given, BatchSize
// once it has pushed back.
func (s *State) startRound(o Options) int {
	if s.pushedBack {
		return o.BatchSize
	}
	return o.FirstRound
}

// unbound counts the live pods pending without a node.
func (s *State) unbound(in Input) int {
	n := 0
	for id, ep := range in.Snapshot.Pods {
		if ep.State.Waiting() && s.deleted[id] == nil && !in.Registered[id] && (ep.Pod == nil || ep.Pod.NodeName == "") {
			n++
		}
	}
	return n
}

// admitted reports whether every pod of the last round is observed and
// scheduled: bound to a node, past Pending, or registered; with a gang
// also held by the queue, which admits none before it sees all.
func (s *State) admitted(in Input, gang bool) bool {
	for _, id := range s.lastRound {
		if s.deleted[id] != nil || in.Registered[id] {
			continue
		}
		ep, ok := in.Snapshot.Pods[id]
		if !ok {
			return false
		}
		if gang && ep.State == snapshot.Gated {
			continue
		}
		if ep.State.Waiting() && (ep.Pod == nil || ep.Pod.NodeName == "") {
			return false
		}
	}
	return true
}

// unschedulable reports whether the scheduler found no node for the pod.
func unschedulable(p *snapshot.Pod) bool {
	if p == nil {
		return false
	}
	for _, c := range p.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}
