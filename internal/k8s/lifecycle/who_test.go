package lifecycle

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/scheduler"
)

// whoStep is one Decide of a removal's story: the pods, the executors the
// backend lists and the driver's requests to delete pods, by offset from
// t0.
type whoStep struct {
	at         time.Duration
	pods       []*podBuilder
	registered []executorid.ID
	killed     map[executorid.ID]time.Duration
}

func (st whoStep) input() Input {
	now := t0.Add(st.at)
	in := Input{Now: now, Snapshot: snap(now, st.pods...)}
	if len(st.registered) > 0 {
		in.Registered = make(map[executorid.ID]time.Time)
		for _, id := range st.registered {
			in.Registered[id] = t0
		}
	}
	if len(st.killed) > 0 {
		in.DeletedByDriver = make(map[executorid.ID]time.Time)
		for id, d := range st.killed {
			in.DeletedByDriver[id] = t0.Add(d)
		}
	}
	return in
}

// TestDecideWhoRemoved checks that a removal says who removed the pod (the
// driver, a user or the cluster, or the cause the pod's status names) and
// whether its executor had registered, including when the backend forgot
// the executor, and the driver asked to delete its pod, before the pod's
// end reached a snapshot.
func TestDecideWhoRemoved(t *testing.T) {
	loss := func(id executorid.ID, cause, msg string, code int, registered bool) RemoveExecutor {
		return RemoveExecutor{ID: id, Reason: scheduler.LossReason{Message: msg, ExitCode: code, Cause: cause}, Registered: registered}
	}
	tests := map[string]struct {
		steps []whoStep
		// want is the last step's actions; the earlier steps have none.
		want []Action
		// notWant are texts the last step's messages must not contain.
		notWant []string
	}{
		"user deletes a registered executor's pod (kubectl delete)": {
			steps: []whoStep{
				{at: 0, pods: []*podBuilder{pod(1).running()}, registered: []executorid.ID{1}},
				// The deletion: the pod runs on while its executor
				// finishes its tasks.
				{at: time.Second, pods: []*podBuilder{pod(1).running().deleting()}, registered: []executorid.ID{1}},
				// The executor left on SIGTERM: the backend dropped it and
				// the driver deleted its pod too, before the pod's end
				// reached a snapshot.
				{at: 3 * time.Second, pods: []*podBuilder{pod(1).phase(corev1.PodSucceeded).deleting().terminated(container, 0, "Completed")},
					killed: map[executorid.ID]time.Duration{1: 2 * time.Second}},
			},
			want: []Action{loss(1, scheduler.CauseDeleted, "pod app-exec-1 was deleted by a user or the cluster (not the driver) after its executor registered", 0, true)},
			// Today's message: wrong on both counts.
			notWant: []string{"killed by the driver", "deleted by the driver", "before its executor registered"},
		},
		"user force-deletes a registered executor's pod": {
			steps: []whoStep{
				{at: 0, pods: []*podBuilder{pod(2).running()}, registered: []executorid.ID{2}},
				// Gone without a deletionTimestamp ever seen; the backend
				// already dropped the executor.
				{at: time.Second},
			},
			want: []Action{loss(2, scheduler.CauseDeleted, "pod app-exec-2 was deleted by a user or the cluster (not the driver) after its executor registered", 0, true)},
		},
		"the driver kills a registered executor": {
			steps: []whoStep{
				{at: 0, pods: []*podBuilder{pod(3).running()}, registered: []executorid.ID{3}},
				{at: 2 * time.Second, pods: []*podBuilder{pod(3).running().deleting()}, killed: map[executorid.ID]time.Duration{3: time.Second}},
				{at: 3 * time.Second, pods: []*podBuilder{pod(3).phase(corev1.PodSucceeded).deleting().terminated(container, 143, "Error")},
					killed: map[executorid.ID]time.Duration{3: time.Second}},
			},
			want: []Action{loss(3, scheduler.CauseKilled, "pod app-exec-3 was deleted by the driver after its executor registered", 0, true)},
		},
		"the driver deletes an excess pending pod": {
			steps: []whoStep{
				{at: 0, pods: []*podBuilder{pod(8)}},
				{at: 2 * time.Second, killed: map[executorid.ID]time.Duration{8: time.Second}},
			},
			want: []Action{loss(8, scheduler.CauseKilled, "pod app-exec-8 was deleted by the driver before its executor registered", 0, false)},
		},
		"eviction through the eviction API (kubectl drain)": {
			steps: []whoStep{
				{at: 0, pods: []*podBuilder{pod(4).running()}, registered: []executorid.ID{4}},
				// The executor left at once and the driver asked to delete
				// its pod before a snapshot showed the eviction: the
				// condition still names the cause.
				{at: time.Second, pods: []*podBuilder{pod(4).running().deleting().
					cond(corev1.DisruptionTarget, corev1.ConditionTrue, "EvictionByEvictionAPI", "Eviction API: evicting")},
					killed: map[executorid.ID]time.Duration{4: 500 * time.Millisecond}},
				{at: 2 * time.Second, killed: map[executorid.ID]time.Duration{4: 500 * time.Millisecond}},
			},
			want: []Action{loss(4, scheduler.CauseEvicted, "pod app-exec-4 was evicted through the eviction API (for example by kubectl drain) after its executor registered: Eviction API: evicting", 0, true)},
		},
		"eviction by the kubelet (node pressure)": {
			steps: []whoStep{
				{at: 0, pods: []*podBuilder{pod(5).running()}, registered: []executorid.ID{5}},
				{at: time.Second, pods: []*podBuilder{pod(5).phase(corev1.PodFailed).
					status("Evicted", "The node was low on resource: memory.").
					cond(corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet", "The node was low on resource: memory.")},
					killed: map[executorid.ID]time.Duration{5: 500 * time.Millisecond}},
			},
			want: []Action{
				loss(5, scheduler.CauseEvicted, "pod app-exec-5 was evicted by the kubelet after its executor registered: The node was low on resource: memory.", 0, true),
				del(5),
			},
		},
		"preemption": {
			steps: []whoStep{
				{at: 0, pods: []*podBuilder{pod(6).running()}, registered: []executorid.ID{6}},
				{at: time.Second, pods: []*podBuilder{pod(6).running().deleting().
					cond(corev1.DisruptionTarget, corev1.ConditionTrue, corev1.PodReasonPreemptionByScheduler, "Preempted in order to admit critical pod")}},
				{at: 2 * time.Second, pods: []*podBuilder{pod(6).phase(corev1.PodFailed).deleting().terminated(container, 143, "Error").
					cond(corev1.DisruptionTarget, corev1.ConditionTrue, corev1.PodReasonPreemptionByScheduler, "Preempted in order to admit critical pod")}},
			},
			want: []Action{loss(6, scheduler.CausePreempted, "pod app-exec-6 was preempted by the scheduler to make room for a higher-priority pod after its executor registered: Preempted in order to admit critical pod", 143, true)},
		},
		"the taint manager deletes the pod of a lost node": {
			steps: []whoStep{
				{at: 0, pods: []*podBuilder{pod(9).running()}, registered: []executorid.ID{9}},
				{at: time.Second, pods: []*podBuilder{pod(9).running().deleting().
					cond(corev1.DisruptionTarget, corev1.ConditionTrue, "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")},
					registered: []executorid.ID{9}},
				{at: 2 * time.Second},
			},
			want: []Action{loss(9, scheduler.CauseDeleted, "pod app-exec-9 was deleted by the taint manager because its node node-1 has a NoExecute taint (often: the node is not ready or unreachable) after its executor registered: Taint manager: deleting due to NoExecute taint", 0, true)},
		},
		"a lost node's pod fails": {
			steps: []whoStep{
				{at: 0, pods: []*podBuilder{pod(10).running()}, registered: []executorid.ID{10}},
				{at: time.Second, pods: []*podBuilder{pod(10).phase(corev1.PodFailed).status("NodeLost", "Node node-1 which was running pod app-exec-10 is unresponsive")},
					killed: map[executorid.ID]time.Duration{10: 500 * time.Millisecond}},
			},
			want: []Action{
				RemoveExecutor{ID: 10, Registered: true, Reason: scheduler.LossReason{
					Message: "pod app-exec-10 was lost with its node after its executor registered: Node node-1 which was running pod app-exec-10 is unresponsive",
					Cause:   scheduler.CauseNodeLost}},
				del(10),
			},
		},
		"user deletes a pod before its executor registered": {
			steps: []whoStep{
				{at: 0, pods: []*podBuilder{pod(7)}},
				{at: time.Second, pods: []*podBuilder{pod(7).deleting()}},
			},
			want: []Action{loss(7, scheduler.CauseDeleted, "pod app-exec-7 was deleted by a user or the cluster (not the driver) before its executor registered", 0, false)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var s State
			o := testOptions()
			last := len(tc.steps) - 1
			for i, st := range tc.steps[:last] {
				if got := Decide(&s, st.input(), o); len(got) != 0 {
					t.Fatalf("step %d: got %v, want nothing", i, got)
				}
			}
			got := Decide(&s, tc.steps[last].input(), o)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			_, text := shape(got)
			for _, bad := range tc.notWant {
				if strings.Contains(text, bad) {
					t.Errorf("messages contain %q:\n%s", bad, text)
				}
			}
		})
	}
}

// TestDecideForgetsRegistrations checks that the memory of registered
// executors and of deletions is bounded: it goes once the pod is gone and
// the deleted-executors cache times out.
func TestDecideForgetsRegistrations(t *testing.T) {
	var s State
	o := testOptions() // DeletedCacheTimeout 3m
	at := func(d time.Duration, reg []executorid.ID, pods ...*podBuilder) []Action {
		return Decide(&s, whoStep{at: d, pods: pods, registered: reg}.input(), o)
	}
	check(t, at(0, []executorid.ID{1}, pod(1).running()), nil)
	check(t, at(time.Second, []executorid.ID{1}, pod(1).running().deleting()), nil)
	if len(s.deleting) != 1 {
		t.Errorf("deleting holds %v, want executor 1", s.deleting)
	}
	// The backend forgets the executor; its pod lingers, then goes.
	check(t, at(2*time.Second, nil, pod(1).running().deleting()), nil)
	check(t, at(time.Minute, nil), []Action{removeReg(1, 0, false)}, "after its executor registered")
	if len(s.deleting) != 0 {
		t.Errorf("deleting holds %v after the removal", s.deleting)
	}
	check(t, at(time.Minute+3*time.Minute, nil), nil)
	if len(s.registered) != 1 || len(s.removed) != 1 {
		t.Errorf("forgotten too soon: registered %v, removed %d", s.registered, len(s.removed))
	}
	check(t, at(time.Minute+3*time.Minute+time.Second, nil), nil)
	if len(s.registered) != 0 || len(s.removed) != 0 {
		t.Errorf("not forgotten: registered %v, removed %d", s.registered, len(s.removed))
	}
	// An executor the backend drops without a pod ever seen is forgotten
	// the same way.
	check(t, at(10*time.Minute, []executorid.ID{2}), nil)
	check(t, at(13*time.Minute, nil), nil)
	check(t, at(13*time.Minute+time.Second, nil), nil)
	if len(s.registered) != 0 {
		t.Errorf("registered holds %v", s.registered)
	}
}
