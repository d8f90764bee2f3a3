package lifecycle

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/scheduler"
)

func remove(id executorid.ID, code int, byApp bool) RemoveExecutor {
	return RemoveExecutor{ID: id, Reason: scheduler.LossReason{ExitCode: code, CausedByApp: byApp}}
}

// removeReg is remove for an executor that had registered.
func removeReg(id executorid.ID, code int, byApp bool) RemoveExecutor {
	r := remove(id, code, byApp)
	r.Registered = true
	return r
}

func del(id executorid.ID) DeletePod { return DeletePod{ID: id, Name: pod(id).obj().Name} }

func TestDecideStates(t *testing.T) {
	failed := func(code int32, reason string) *podBuilder {
		return pod(1).phase(corev1.PodFailed).terminated(container, code, reason)
	}
	tests := map[string]struct {
		pod    *podBuilder
		opts   func(*Options)
		killed bool
		want   []Action
		// cause is the removal's Cause, when there is a removal.
		cause string
		texts []string
	}{
		"pending": {pod: pod(1)},
		"running": {pod: pod(1).running()},
		"unknown": {pod: pod(1).phase("Unknown")},
		"deleted": {
			pod:   pod(1).deleting(),
			cause: scheduler.CauseDeleted,
			want:  []Action{remove(1, 0, false)},
			texts: []string{"pod app-exec-1 was deleted by a user or the cluster (not the driver) before its executor registered"},
		},
		"deleted, preempted": {
			pod: pod(1).deleting().cond(corev1.DisruptionTarget, corev1.ConditionTrue,
				corev1.PodReasonPreemptionByScheduler, "Preempted in order to admit critical pod"),
			cause: scheduler.CausePreempted,
			want:  []Action{remove(1, 0, false)},
			texts: []string{"pod app-exec-1 was preempted by the scheduler to make room for a higher-priority pod before its executor registered: Preempted in order to admit critical pod"},
		},
		"deleted, preempted by its queue": {
			pod: pod(1).label(snapshot.LabelKueueQueue, "team-a").deleting().cond("TerminationTarget", corev1.ConditionTrue,
				"WorkloadEvictedDueToPreempted", "Preempted to accommodate a workload (UID: 42) due to prioritization in the ClusterQueue"),
			cause: scheduler.CausePreempted,
			want:  []Action{remove(1, 0, false)},
			texts: []string{"pod app-exec-1 was preempted by queue team-a before its executor registered: Preempted to accommodate a workload (UID: 42) due to prioritization in the ClusterQueue"},
		},
		"deleted, evicted by its queue": {
			pod: pod(1).label(snapshot.LabelKueueQueue, "team-a").deleting().cond("TerminationTarget", corev1.ConditionTrue,
				"WorkloadEvictedDueToClusterQueueStopped", "The ClusterQueue is stopped"),
			cause: scheduler.CauseEvicted,
			want:  []Action{remove(1, 0, false)},
			texts: []string{"pod app-exec-1 was evicted by queue team-a (WorkloadEvictedDueToClusterQueueStopped) before its executor registered: The ClusterQueue is stopped"},
		},
		// The queue's preemption wins over the driver's deletion that
		// follows it (the executor, told to leave, is dropped).
		"preempted by its queue, then deleted by the driver": {
			pod: pod(1).label(snapshot.LabelKueueQueue, "team-a").deleting().cond("TerminationTarget", corev1.ConditionTrue,
				"WorkloadEvictedDueToPreempted", "Preempted"),
			killed: true,
			cause:  scheduler.CausePreempted,
			want:   []Action{remove(1, 0, false)},
			texts:  []string{"pod app-exec-1 was preempted by queue team-a"},
		},
		"deleted, drained": {
			pod:   pod(1).deleting().cond(corev1.DisruptionTarget, corev1.ConditionTrue, "EvictionByEvictionAPI", "Eviction API: evicting"),
			cause: scheduler.CauseEvicted,
			want:  []Action{remove(1, 0, false)},
			texts: []string{"evicted through the eviction API (for example by kubectl drain)"},
		},
		"deleted by the driver": {
			pod:    pod(1).deleting(),
			killed: true,
			cause:  scheduler.CauseKilled,
			want:   []Action{remove(1, 0, false)},
			texts:  []string{"pod app-exec-1 was deleted by the driver before its executor registered"},
		},
		"failed, error": {
			pod:   failed(1, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 1, true), del(1)},
			texts: []string{"pod app-exec-1 failed before its executor registered: executor container exited with an error; see the executor's log (exit code 1)"},
		},
		"failed, Go panic": {
			pod:   failed(2, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 2, true), del(1)},
			texts: []string{"Go panic or fatal runtime error"},
		},
		"OOM-killed": {
			pod:   failed(137, "OOMKilled"),
			cause: scheduler.CauseOOMKilled,
			want:  []Action{remove(1, 137, true), del(1)},
			texts: []string{"pod app-exec-1 failed before its executor registered: executor container was OOMKilled by the kernel (memory limit 2Gi); raise spark.executor.memoryOverhead or spark.executor.memory (exit code 137)"},
		},
		"OOM-killed, no limit": {
			pod:   failed(137, "OOMKilled").noMemoryLimit(),
			cause: scheduler.CauseOOMKilled,
			want:  []Action{remove(1, 137, true), del(1)},
			texts: []string{"OOMKilled by the kernel (no memory limit: the node ran out of memory)"},
		},
		"exit 137": {
			pod:   failed(137, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 137, true), del(1)},
			texts: []string{"killed by SIGKILL, possibly the container's memory limit"},
		},
		"exit 139": {
			pod:   failed(139, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 139, true), del(1)},
			texts: []string{"killed by SIGSEGV"},
		},
		"exit 143": {
			pod:   failed(143, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 143, true), del(1)},
			texts: []string{"killed by SIGTERM"},
		},
		"exit 126": {
			pod:   failed(126, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 126, true), del(1)},
			texts: []string{"not executable"},
		},
		"exit 127": {
			pod:   failed(127, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 127, true), del(1)},
			texts: []string{"command not found"},
		},
		"exit 130": {
			pod:   failed(130, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 130, true), del(1)},
			texts: []string{"killed by SIGINT"},
		},
		"exit 3": {
			pod:   failed(3, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 3, true), del(1)},
			texts: []string{"exited with an unexpected code (exit code 3)"},
		},
		"start error": {
			pod:   failed(128, "StartError").termMessage(`exec: "/app": permission denied`),
			cause: scheduler.CauseStartFailed,
			want:  []Action{remove(1, 128, true), del(1)},
			texts: []string{`pod app-exec-1 failed before its executor registered: executor container could not start; termination message: exec: "/app": permission denied`},
		},
		"termination message": {
			pod:   failed(2, "Error").termMessage("panic: boom\n\ngoroutine 1 [running]:\n"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 2, true), del(1)},
			texts: []string{"termination message: panic: boom"},
		},
		"pod-level failure": {
			pod:   pod(1).phase(corev1.PodFailed).status("DeadlineExceeded", "Pod was active on the node longer than the specified deadline"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 0, true), del(1)},
			texts: []string{"pod app-exec-1 failed before its executor registered; pod status: DeadlineExceeded: Pod was active on the node longer than the specified deadline"},
		},
		"evicted": {
			pod:   pod(1).phase(corev1.PodFailed).status("Evicted", "The node was low on resource: ephemeral-storage."),
			cause: scheduler.CauseEvicted,
			want:  []Action{remove(1, 0, false), del(1)},
			texts: []string{"pod app-exec-1 was evicted by the kubelet before its executor registered: The node was low on resource: ephemeral-storage."},
		},
		"succeeded": {
			pod:   pod(1).phase(corev1.PodSucceeded).terminated(container, 0, "Completed"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 0, true), del(1)},
			texts: []string{"pod app-exec-1 ended before its executor registered: executor container exited cleanly, but an executor must not exit on its own"},
		},
		"running pod, executor exited": {
			pod:   pod(1).running().terminated(container, 1, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 1, true), del(1)},
			texts: []string{"executor container exited with an error"},
		},
		"running pod, sidecar failed": {
			pod:   pod(1).running().terminated("proxy", 1, "Error"),
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 1, true), del(1)},
			texts: []string{"pod app-exec-1 failed before its executor registered: container proxy exited with an error"},
		},
		"sidecar OOM-killed": {
			pod:   failed(143, "Error").terminated("proxy", 137, "OOMKilled"),
			cause: scheduler.CauseOOMKilled,
			want:  []Action{remove(1, 137, true), del(1)},
			texts: []string{"container proxy was OOMKilled by the kernel", "container executor terminated: Error, exit code 143"},
		},
		"terminated while being deleted": {
			pod:   pod(1).running().deleting().terminated(container, 143, "Error"),
			cause: scheduler.CauseDeleted,
			want:  []Action{remove(1, 143, false)},
			texts: []string{"pod app-exec-1 was deleted by a user or the cluster (not the driver) before its executor registered (exit code 143)"},
		},
		"OOM-killed while being deleted": {
			pod:   pod(1).running().deleting().terminated(container, 137, "OOMKilled"),
			cause: scheduler.CauseOOMKilled,
			want:  []Action{remove(1, 137, true)},
			texts: []string{"OOMKilled by the kernel"},
		},
		"failed, killed by the driver": {
			pod:    failed(143, "Error"),
			killed: true,
			cause:  scheduler.CauseKilled,
			want:   []Action{remove(1, 0, false), del(1)},
			texts:  []string{"pod app-exec-1 was deleted by the driver before its executor registered"},
		},
		"failed, kept": {
			pod:   failed(1, "Error"),
			opts:  func(o *Options) { o.DeleteOnTermination = false },
			cause: scheduler.CauseExited,
			want:  []Action{remove(1, 1, true), LabelInactive{ID: 1, Name: "app-exec-1"}},
			texts: []string{"exited with an error"},
		},
		"node lost": {
			pod:   pod(1).running().status("NodeLost", "Node node-1 which was running pod app-exec-1 is unresponsive"),
			opts:  func(o *Options) { o.PendingGrace = map[Reason]time.Duration{ReasonNodeLost: 0} },
			cause: scheduler.CauseNodeLost,
			want:  []Action{remove(1, 0, false), del(1)},
			texts: []string{"pod app-exec-1 was lost with its node before its executor registered: Node node-1 which was running pod app-exec-1 is unresponsive"},
		},
		"node status unknown": {
			pod:   pod(1).running().cond(corev1.PodReady, corev1.ConditionUnknown, "NodeStatusUnknown", ""),
			opts:  func(o *Options) { o.PendingGrace = map[Reason]time.Duration{ReasonNodeLost: 0} },
			cause: scheduler.CauseNodeLost,
			want:  []Action{remove(1, 0, false), del(1)},
			texts: []string{"lost with its node before its executor registered: node node-1 stopped reporting to the control plane"},
		},
		"node not ready": {
			pod:   pod(1).running().cond(corev1.PodReady, corev1.ConditionFalse, "", ""),
			opts:  func(o *Options) { o.PendingGrace = map[Reason]time.Duration{ReasonNodeLost: 0} },
			cause: scheduler.CauseNodeLost,
			want:  []Action{remove(1, 0, false), del(1)},
			texts: []string{"lost with its node"},
		},
		"node lost, pod being deleted": {
			pod: pod(1).running().deleting().cond(corev1.PodReady, corev1.ConditionFalse, "", "").
				cond(corev1.DisruptionTarget, corev1.ConditionTrue, "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint"),
			opts:  func(o *Options) { o.PendingGrace = map[Reason]time.Duration{ReasonNodeLost: 0} },
			cause: scheduler.CauseNodeLost,
			want:  []Action{remove(1, 0, false)},
			texts: []string{"lost with its node"},
		},
		"node lost, within grace": {
			pod: pod(1).running().status("NodeLost", "unresponsive"),
		},
		"containers not ready": {
			pod: pod(1).running().cond(corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", "").
				cond(corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", ""),
		},
		"image pull back-off": {
			pod:   pod(1).waiting("ImagePullBackOff", `Back-off pulling image "nope:1"`),
			want:  []Action{Warn{PodName: "app-exec-1"}},
			texts: []string{`pod app-exec-1: ImagePullBackOff: Back-off pulling image "nope:1"; the pod will be deleted if this lasts 1m0s`},
		},
		"invalid image name, no grace": {
			pod:   pod(1).waiting("InvalidImageName", `couldn't parse image name "Nope:1": invalid reference format`),
			opts:  func(o *Options) { o.PendingGrace = map[Reason]time.Duration{ReasonInvalidImageName: 0} },
			cause: scheduler.CauseStartFailed,
			want:  []Action{remove(1, 0, false), del(1), Warn{PodName: "app-exec-1"}},
			texts: []string{`pod app-exec-1 could not start and was deleted by the driver before its executor registered: InvalidImageName: couldn't parse image name "Nope:1": invalid reference format`},
		},
		"unschedulable": {
			pod: pod(1).unschedulable("0/3 nodes are available: 3 Insufficient memory."),
		},
		"unschedulable, no grace": {
			pod:   pod(1).unschedulable("0/3 nodes are available: 3 Insufficient memory."),
			opts:  func(o *Options) { o.PendingGrace = map[Reason]time.Duration{ReasonUnschedulable: 0} },
			want:  []Action{Warn{PodName: "app-exec-1"}},
			texts: []string{"pod app-exec-1: Unschedulable: 0/3 nodes are available: 3 Insufficient memory.; the pod keeps waiting for a node"},
		},
		"pending, being deleted": {
			pod: pod(1).running().deleting().phase(corev1.PodRunning),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := testOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			in := Input{Now: t0, Snapshot: snap(t0, tc.pod)}
			if tc.killed {
				in.DeletedByDriver = map[executorid.ID]time.Time{1: t0}
			}
			got := Decide(&State{}, in, o)
			check(t, got, tc.want, tc.texts...)
			for _, a := range got {
				if r, ok := a.(RemoveExecutor); ok && r.Reason.Cause != tc.cause {
					t.Errorf("cause %q, want %q", r.Reason.Cause, tc.cause)
				}
			}
		})
	}
}

// TestDecideOnce checks that an executor is removed, and its pod deleted,
// once however many snapshots show it.
func TestDecideOnce(t *testing.T) {
	tests := map[string]*podBuilder{
		"failed":    pod(1).phase(corev1.PodFailed).terminated(container, 1, "Error"),
		"deleted":   pod(1).deleting(),
		"succeeded": pod(1).phase(corev1.PodSucceeded),
	}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			var s State
			o := testOptions()
			if got := Decide(&s, Input{Now: t0, Snapshot: snap(t0, p)}, o); len(got) == 0 {
				t.Fatal("first snapshot: no action")
			}
			for i := 1; i <= 3; i++ {
				now := t0.Add(time.Duration(i) * time.Second)
				if got := Decide(&s, Input{Now: now, Snapshot: snap(now, p)}, o); len(got) != 0 {
					t.Errorf("snapshot %d: got %v, want nothing", i, got)
				}
			}
		})
	}
}

func TestDecideRemovedCacheExpiry(t *testing.T) {
	var s State
	o := testOptions() // DeletedCacheTimeout 3m
	failed := pod(4).phase(corev1.PodFailed).terminated(container, 1, "Error")
	reg := map[executorid.ID]time.Time{4: t0.Add(-time.Hour)}
	in := func(now time.Time, pods ...*podBuilder) Input {
		return Input{Now: now, Snapshot: snap(now, pods...), FullSync: true, Registered: reg}
	}
	check(t, Decide(&s, in(t0, failed), o), []Action{removeReg(4, 1, true), del(4)},
		"pod app-exec-4 failed after its executor registered")
	// The pod stays (say its deletion hangs) longer than the timeout: the
	// entry lasts while the pod is seen.
	check(t, Decide(&s, in(t0.Add(5*time.Minute), failed.deleting()), o), nil)
	// Gone at 5m; the backend still lists the executor (it lags): still
	// remembered until 3m after the pod was last seen.
	gone := t0.Add(5*time.Minute + time.Second)
	check(t, Decide(&s, in(gone), o), nil)
	check(t, Decide(&s, in(gone.Add(3*time.Minute-time.Second)), o), nil)
	// Then forgotten: a registered executor without a pod is missing.
	check(t, Decide(&s, in(gone.Add(3*time.Minute+time.Second)), o), []Action{removeReg(4, 0, false)},
		"pod of executor 4 was deleted by a user or the cluster (not the driver) after its executor registered: it is not found in a full list of the application's pods")
	if len(s.removed) != 1 { // only the new removal
		t.Errorf("removed cache holds %d entries, want 1", len(s.removed))
	}
}

func TestDecideVanishedPod(t *testing.T) {
	tests := map[string]struct {
		last   *podBuilder
		killed bool
		want   string
	}{
		"deleted":   {last: pod(2).running(), want: "pod app-exec-2 was deleted by a user or the cluster (not the driver) before its executor registered"},
		"killed":    {last: pod(2).running(), killed: true, want: "pod app-exec-2 was deleted by the driver before its executor registered"},
		"node gone": {last: pod(2).running().cond(corev1.DisruptionTarget, corev1.ConditionTrue, "DeletionByPodGC", "PodGC: node no longer exists"), want: "pod app-exec-2 was deleted by the pod garbage collector because its node node-1 is gone before its executor registered: PodGC: node no longer exists"},
		"pending":   {last: pod(2), want: "pod app-exec-2 was deleted by a user or the cluster (not the driver) before its executor registered"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var s State
			o := testOptions()
			check(t, Decide(&s, Input{Now: t0, Snapshot: snap(t0, tc.last)}, o), nil)
			in := Input{Now: t0.Add(time.Second), Snapshot: snap(t0.Add(time.Second))}
			if tc.killed {
				in.DeletedByDriver = map[executorid.ID]time.Time{2: t0}
			}
			check(t, Decide(&s, in, o), []Action{remove(2, 0, false)}, tc.want)
		})
	}
}

func TestDecideMissingPod(t *testing.T) {
	reg := map[executorid.ID]time.Time{7: t0}
	o := testOptions() // MissingPodDetectDelta 30s
	tests := map[string]struct {
		at     time.Duration
		full   bool
		killed bool
		want   []Action
		text   string
	}{
		"within the delta":         {at: 30 * time.Second, full: true},
		"not a full sync":          {at: 31 * time.Second},
		"after the delta":          {at: 31 * time.Second, full: true, want: []Action{removeReg(7, 0, false)}, text: "pod of executor 7 was deleted by a user or the cluster (not the driver) after its executor registered: it is not found in a full list of the application's pods"},
		"after the delta, killed":  {at: 31 * time.Second, full: true, killed: true, want: []Action{removeReg(7, 0, false)}, text: "pod of executor 7 was deleted by the driver after its executor registered"},
		"registered after listing": {at: -time.Minute, full: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			at := t0.Add(tc.at)
			in := Input{Now: t0.Add(time.Hour), Snapshot: snap(at, pod(1).running()), FullSync: tc.full, Registered: reg}
			if tc.killed {
				in.DeletedByDriver = map[executorid.ID]time.Time{7: t0}
			}
			var s State
			check(t, Decide(&s, in, o), tc.want, tc.text)
			// Removed once.
			in.Now = in.Now.Add(time.Second)
			check(t, Decide(&s, in, o), nil)
		})
	}
}

func TestDecideFailureAccounting(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	o := testOptions()
	o.MaxExecutorFailures = 2
	o.FailuresValidityInterval = 10 * time.Minute
	o.StartTimeout = 0
	var s State
	fail := func(id executorid.ID) []Action {
		p := pod(id).phase(corev1.PodFailed).terminated(container, 137, "OOMKilled")
		return Decide(&s, Input{Now: clk.Now(), Snapshot: snap(clk.Now(), p)}, o)
	}
	check(t, fail(1), []Action{remove(1, 137, true), del(1)})
	clk.Step(6 * time.Minute)
	check(t, fail(2), []Action{remove(2, 137, true), del(2)})
	// The first failure has expired when the third comes: 2 failures count.
	clk.Step(5 * time.Minute)
	check(t, fail(3), []Action{remove(3, 137, true), del(3)})
	if got := s.ExecutorFailures(); got != 2 {
		t.Errorf("ExecutorFailures = %d, want 2", got)
	}
	// Three within 10 minutes: more than 2.
	clk.Step(time.Minute)
	got := fail(4)
	check(t, got, []Action{remove(4, 137, true), del(4), FailApplication{}},
		"exceeded spark.executor.maxNumFailures (2): last failure: pod app-exec-4 failed before its executor registered: executor container was OOMKilled by the kernel (memory limit 2Gi)")
	if err := got[len(got)-1].(FailApplication).Err; !errors.Is(err, ErrTooManyFailures) {
		t.Errorf("error %v is not ErrTooManyFailures", err)
	}
	// Failing is said once.
	clk.Step(time.Second)
	check(t, fail(5), []Action{remove(5, 137, true), del(5)})
}

func TestDecideFailuresNotCounted(t *testing.T) {
	o := testOptions()
	o.MaxExecutorFailures = 1
	pods := []*podBuilder{
		pod(1).deleting(),
		pod(2).phase(corev1.PodSucceeded).terminated(container, 0, "Completed"),
		pod(3).phase(corev1.PodFailed).terminated(container, 143, "Error"), // killed by the driver
		pod(4).running().deleting().terminated(container, 143, "Error"),
		pod(5).phase(corev1.PodFailed).status("NodeLost", "unresponsive"),
	}
	var s State
	got := Decide(&s, Input{Now: t0, Snapshot: snap(t0, pods...), DeletedByDriver: map[executorid.ID]time.Time{3: t0}}, o)
	check(t, got, []Action{
		remove(1, 0, false),
		remove(2, 0, true), del(2),
		remove(3, 0, false), del(3),
		remove(4, 143, false),
		remove(5, 0, false), del(5),
	})
	if n := s.ExecutorFailures(); n != 0 {
		t.Errorf("ExecutorFailures = %d, want 0", n)
	}
}

func TestDecidePendingGrace(t *testing.T) {
	tests := map[Reason]time.Duration{
		ReasonErrImagePull:               time.Minute,
		ReasonImagePullBackOff:           time.Minute,
		ReasonInvalidImageName:           10 * time.Second,
		ReasonErrImageNeverPull:          10 * time.Second,
		ReasonCreateContainerConfigError: 10 * time.Second,
		ReasonCreateContainerError:       30 * time.Second,
		ReasonRunContainerError:          30 * time.Second,
	}
	for reason, grace := range tests {
		t.Run(string(reason), func(t *testing.T) {
			o := testOptions()
			o.DeleteOnTermination = false // start failures are deleted anyway
			p := pod(3).waiting(string(reason), "details")
			var s State
			at := func(d time.Duration) []Action {
				return Decide(&s, Input{Now: t0.Add(d), Snapshot: snap(t0.Add(d), p)}, o)
			}
			check(t, at(0), []Action{Warn{PodName: "app-exec-3"}},
				"pod app-exec-3: "+string(reason)+": details; the pod will be deleted if this lasts "+grace.String())
			check(t, at(grace-time.Second), nil)
			check(t, at(grace), []Action{remove(3, 0, false), del(3)},
				"pod app-exec-3 could not start and was deleted by the driver before its executor registered: "+string(reason)+": details")
			if n := s.ExecutorFailures(); n != 1 {
				t.Errorf("ExecutorFailures = %d, want 1", n)
			}
			// The deletion that follows is not a second removal.
			check(t, at(grace+time.Second), nil)
		})
	}
}

func TestDecideImagePullAlternates(t *testing.T) {
	var s State
	o := testOptions()
	at := func(d time.Duration, reason string) []Action {
		p := pod(1).waiting(reason, `pulling image "nope:1"`)
		return Decide(&s, Input{Now: t0.Add(d), Snapshot: snap(t0.Add(d), p)}, o)
	}
	check(t, at(0, "ErrImagePull"), []Action{Warn{PodName: "app-exec-1"}})
	// The kubelet alternates: the same problem, reported once, one clock.
	check(t, at(20*time.Second, "ImagePullBackOff"), nil)
	check(t, at(40*time.Second, "ErrImagePull"), nil)
	check(t, at(60*time.Second, "ImagePullBackOff"), []Action{remove(1, 0, false), del(1)}, "ImagePullBackOff")
}

func TestDecideProblemResolved(t *testing.T) {
	var s State
	o := testOptions()
	bad := pod(1).waiting("ErrImagePull", "registry unavailable")
	check(t, Decide(&s, Input{Now: t0, Snapshot: snap(t0, bad)}, o), []Action{Warn{PodName: "app-exec-1"}})
	// Pulled on retry: the problem's clock stops.
	check(t, Decide(&s, Input{Now: t0.Add(30 * time.Second), Snapshot: snap(t0, pod(1))}, o), nil)
	// Back again: a new clock, not reported again.
	check(t, Decide(&s, Input{Now: t0.Add(40 * time.Second), Snapshot: snap(t0, bad)}, o), nil)
	check(t, Decide(&s, Input{Now: t0.Add(70 * time.Second), Snapshot: snap(t0, bad)}, o), nil)
	check(t, Decide(&s, Input{Now: t0.Add(100 * time.Second), Snapshot: snap(t0, bad)}, o), []Action{remove(1, 0, false), del(1)})
}

func TestDecideUnschedulable(t *testing.T) {
	var s State
	o := testOptions()
	o.StartTimeout = 0
	p := pod(5).unschedulable("0/3 nodes are available: 3 Insufficient cpu.")
	at := func(d time.Duration) []Action {
		return Decide(&s, Input{Now: t0.Add(d), Snapshot: snap(t0, p)}, o)
	}
	check(t, at(0), nil)
	check(t, at(10*time.Second), []Action{Warn{PodName: "app-exec-5"}},
		"pod app-exec-5: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.; the pod keeps waiting for a node")
	check(t, at(time.Hour), nil) // never deleted, warned once
}

func TestDecideWarningsShared(t *testing.T) {
	o := testOptions()
	const msg = `Back-off pulling image "nope:1"`
	got := Decide(&State{}, Input{Now: t0, Snapshot: snap(t0,
		pod(3).waiting("ImagePullBackOff", msg),
		pod(1).waiting("ImagePullBackOff", msg),
		pod(2).waiting("CreateContainerConfigError", `secret "creds" not found`),
		pod(4).waiting("ImagePullBackOff", msg),
	)}, o)
	want := []Action{
		Warn{PodName: "app-exec-1", Message: `pod app-exec-1 (and 2 other pods): ImagePullBackOff: Back-off pulling image "nope:1"; the pod will be deleted if this lasts 1m0s`},
		Warn{PodName: "app-exec-2", Message: `pod app-exec-2: CreateContainerConfigError: secret "creds" not found; the pod will be deleted if this lasts 10s`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

func TestDecideStartTimeout(t *testing.T) {
	o := testOptions()
	o.PendingGrace = map[Reason]time.Duration{ReasonImagePullBackOff: time.Hour}
	p := pod(3).waiting("ImagePullBackOff", `Back-off pulling image "nope:1"`)
	t.Run("fails with the cause", func(t *testing.T) {
		var s State
		Decide(&s, Input{Now: t0, Snapshot: snap(t0, p)}, o)
		check(t, Decide(&s, Input{Now: t0.Add(5*time.Minute - time.Second), Snapshot: snap(t0, p)}, o), nil)
		got := Decide(&s, Input{Now: t0.Add(5 * time.Minute), Snapshot: snap(t0, p)}, o)
		want := []Action{FailApplication{Err: errors.New(`no executor could start for 5m0s: pod app-exec-3: ImagePullBackOff: Back-off pulling image "nope:1"`)}}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a.Error() == b.Error() })); diff != "" {
			t.Errorf("actions (-want +got):\n%s", diff)
		}
		if !errors.Is(got[0].(FailApplication).Err, ErrStartTimeout) {
			t.Errorf("error is not ErrStartTimeout")
		}
		check(t, Decide(&s, Input{Now: t0.Add(6 * time.Minute), Snapshot: snap(t0, p)}, o), nil)
	})
	alive := map[string]Input{
		"an executor is registered": {Registered: map[executorid.ID]time.Time{1: t0}, Snapshot: snap(t0, p, pod(1).running())},
		"a pod runs":                {Snapshot: snap(t0, p, pod(1).running())},
		"the backend runs one":      {RunningExecutors: 1, Snapshot: snap(t0, p)},
	}
	for name, in := range alive {
		t.Run(name, func(t *testing.T) {
			var s State
			for _, d := range []time.Duration{0, 5 * time.Minute, 10 * time.Minute} {
				in.Now = t0.Add(d)
				if f := failOf(Decide(&s, in, o)); f != nil {
					t.Errorf("at %s: %v", d, f.Err)
				}
			}
		})
	}
	t.Run("pods replaced", func(t *testing.T) {
		// Pods fail, are deleted after their grace and are replaced by pods
		// that look healthy for a few seconds: still no executor could start.
		o := testOptions()
		o.MaxExecutorFailures = 0
		var s State
		var fail *FailApplication
		for i := range 6 {
			start := t0.Add(time.Duration(i) * 70 * time.Second)
			id := executorid.ID(i + 1)
			fresh, bad := pod(id), pod(id).waiting("ErrImagePull", "not found")
			for _, step := range []struct {
				d time.Duration
				p *podBuilder
			}{{0, fresh}, {5 * time.Second, bad}, {65 * time.Second, bad}} {
				now := start.Add(step.d)
				if f := failOf(Decide(&s, Input{Now: now, Snapshot: snap(now, step.p)}, o)); f != nil && fail == nil {
					fail = f
					if d := now.Sub(t0); d < o.StartTimeout {
						t.Errorf("failed after %s, before the start timeout", d)
					}
				}
			}
		}
		if fail == nil {
			t.Fatal("the application did not fail")
		}
		if !strings.Contains(fail.Err.Error(), "no executor could start for 5m0s: pod app-exec-5: ErrImagePull: not found") {
			t.Errorf("error = %v", fail.Err)
		}
	})
	t.Run("a start in between resets", func(t *testing.T) {
		var s State
		Decide(&s, Input{Now: t0, Snapshot: snap(t0, p)}, o)
		Decide(&s, Input{Now: t0.Add(4 * time.Minute), Snapshot: snap(t0, p, pod(1).running())}, o)
		// The executor's pod is deleted: a new run of start failures.
		check(t, Decide(&s, Input{Now: t0.Add(5 * time.Minute), Snapshot: snap(t0, p)}, o), []Action{remove(1, 0, false)})
		check(t, Decide(&s, Input{Now: t0.Add(9*time.Minute + 59*time.Second), Snapshot: snap(t0, p)}, o), nil)
		check(t, Decide(&s, Input{Now: t0.Add(10 * time.Minute), Snapshot: snap(t0, p)}, o), []Action{FailApplication{}})
	})
	t.Run("a long quiet gap resets", func(t *testing.T) {
		var s State
		Decide(&s, Input{Now: t0, Snapshot: snap(t0, p)}, o)
		// A slow image pull with no problem for two minutes.
		Decide(&s, Input{Now: t0.Add(time.Minute), Snapshot: snap(t0, pod(3))}, o)
		Decide(&s, Input{Now: t0.Add(3 * time.Minute), Snapshot: snap(t0, pod(3))}, o)
		check(t, Decide(&s, Input{Now: t0.Add(5 * time.Minute), Snapshot: snap(t0, p)}, o), nil)
	})
}

func TestDecideCleanupRetry(t *testing.T) {
	var s State
	o := testOptions()
	failed := pod(1).phase(corev1.PodFailed).terminated(container, 1, "Error")
	at := func(d time.Duration, p *podBuilder) []Action {
		return Decide(&s, Input{Now: t0.Add(d), Snapshot: snap(t0, p)}, o)
	}
	check(t, at(0, failed), []Action{remove(1, 1, true), del(1)})
	if !s.tick {
		t.Error("no tick requested while the deletion is unconfirmed")
	}
	check(t, at(29*time.Second, failed), nil)
	// Still there, unchanged: ask again (the first call failed).
	check(t, at(30*time.Second, failed), []Action{del(1)})
	check(t, at(31*time.Second, failed.deleting()), nil)
	check(t, at(90*time.Second, failed.deleting()), nil)
	if s.tick {
		t.Error("tick requested with nothing to wait for")
	}
}

func failOf(actions []Action) *FailApplication {
	for _, a := range actions {
		if f, ok := a.(FailApplication); ok {
			return &f
		}
	}
	return nil
}

// A pod a queue holds (Kueue's scheduling gate) waits as long as the queue
// says: it is not a start failure, not unschedulable, and never deleted,
// however long the gate stays.
func TestDecideGatedPodWaits(t *testing.T) {
	var s State
	o := testOptions()
	gated := pod(2)
	gated.p.Spec.NodeName = ""
	gated.p.Labels[snapshot.LabelKueueQueue] = "team-a"
	gated.p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: snapshot.GateKueue}}
	gated.cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonSchedulingGated, "Scheduling is blocked due to non-empty scheduling gates")
	for _, d := range []time.Duration{0, time.Minute, o.StartTimeout, 10 * time.Minute, time.Hour} {
		check(t, Decide(&s, Input{Now: t0.Add(d), Snapshot: snap(t0, gated)}, o), nil)
	}
	// Admitted an hour later: it starts like any pod.
	check(t, Decide(&s, Input{Now: t0.Add(time.Hour + time.Second), Snapshot: snap(t0, pod(2).running())}, o), nil)
}
