package snapshot

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestNewPodKeepsWhatTheDriverReads: a Pod holds, for each field of a
// decoded pod the driver reads, the same value, and classifies as the
// driver's rules say.
func TestNewPodKeepsWhatTheDriverReads(t *testing.T) {
	full := func(mutate func(p *corev1.Pod)) *corev1.Pod {
		now := metav1.Now()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "app-exec-1", Namespace: "spark", UID: "u1", ResourceVersion: "42", CreationTimestamp: now,
				Labels:          map[string]string{LabelExecutorID: "1", LabelKueueQueue: "q"},
				Annotations:     map[string]string{"a": "b"},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "drover"}},
				OwnerReferences: []metav1.OwnerReference{{Name: "driver"}},
			},
			Spec: corev1.PodSpec{
				NodeName: "node-1", RestartPolicy: corev1.RestartPolicyNever,
				Volumes: []corev1.Volume{{Name: "conf"}},
				Containers: []corev1.Container{{
					Name: "executor", Image: "drover:1", Args: []string{"executor"},
					Env:          []corev1.EnvVar{{Name: "SPARK_EXECUTOR_ID", Value: "1"}},
					VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/conf"}},
					Resources: corev1.ResourceRequirements{
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1408Mi")},
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
					},
				}},
			},
			Status: corev1.PodStatus{
				Phase: corev1.PodRunning, PodIP: "10.0.0.1",
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "executor", Image: "drover:1", ImageID: "sha",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
			},
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	testCases := map[string]struct {
		pod   *corev1.Pod
		state State
	}{
		"running": {full(nil), Running},
		"gated": {full(func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: GateKueue}}
		}), Gated},
		"unschedulable": {full(func(p *corev1.Pod) {
			p.Spec.NodeName = ""
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
				Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes: Insufficient memory"}}}
		}), Pending},
		"image pull": {full(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
		}), Pending},
		"OOMKilled": {full(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
		}), Failed},
		"exited in a running pod": {full(func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "panic"}}
		}), Failed},
		"evicted": {full(func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"}
		}), Failed},
		"deleted": {full(func(p *corev1.Pod) {
			ts := metav1.Now()
			p.DeletionTimestamp = &ts
			p.Status.Phase = corev1.PodPending
		}), Deleted},
		"inactive, pod-level limit, no container limit": {full(func(p *corev1.Pod) {
			p.Labels[LabelInactive] = "true"
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")}}
		}), Running},
		"driver":        {full(func(p *corev1.Pod) { p.Labels[LabelExecutorID] = "driver" }), Running},
		"without an id": {full(func(p *corev1.Pod) { delete(p.Labels, LabelExecutorID) }), Running},
	}
	// running is a state with the start time, which is not read, dropped.
	running := func(st corev1.ContainerState) corev1.ContainerState {
		if st.Running != nil {
			st.Running = &corev1.ContainerStateRunning{}
		}
		return st
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			p := tc.pod
			id, ok := ExecutorID(p)
			var podLimit string
			if p.Spec.Resources != nil {
				podLimit = p.Spec.Resources.Limits.Memory().String()
			}
			want := map[string]any{
				"name": p.Name, "rv": p.ResourceVersion, "id": id, "executor": ok,
				"inactive": p.Labels[LabelInactive] == "true", "queue": p.Labels[LabelKueueQueue],
				"created": p.CreationTimestamp.Time, "deleting": p.DeletionTimestamp != nil, "node": p.Spec.NodeName,
				"gates": p.Spec.SchedulingGates, "restart": p.Spec.RestartPolicy, "pod limit": podLimit,
				"phase": p.Status.Phase, "reason": p.Status.Reason, "message": p.Status.Message, "ip": p.Status.PodIP,
			}
			for _, c := range p.Status.Conditions {
				want["condition "+string(c.Type)] = []string{string(c.Status), c.Reason, c.Message}
			}
			for _, ct := range p.Spec.Containers {
				if q, ok := ct.Resources.Limits[corev1.ResourceMemory]; ok {
					want["limit "+ct.Name] = q.String()
				} else {
					want["limit "+ct.Name] = ""
				}
			}
			for _, cs := range p.Status.ContainerStatuses {
				want["state "+cs.Name] = running(cs.State)
			}
			for _, cs := range p.Status.InitContainerStatuses {
				want["init state "+cs.Name] = running(cs.State)
			}

			c := NewPod(p)
			got := map[string]any{
				"name": c.Name, "rv": c.ResourceVersion, "id": c.ID, "executor": c.Executor,
				"inactive": c.Inactive, "queue": c.Queue,
				"created": c.Created, "deleting": c.Deleting, "node": c.NodeName,
				"gates": c.SchedulingGates, "restart": c.RestartPolicy, "pod limit": c.MemoryLimit,
				"phase": c.Phase, "reason": c.Reason, "message": c.Message, "ip": c.IP,
			}
			for _, cd := range c.Conditions {
				got["condition "+string(cd.Type)] = []string{string(cd.Status), cd.Reason, cd.Message}
			}
			for _, ct := range c.Containers {
				got["limit "+ct.Name] = ct.MemoryLimit
			}
			for _, cs := range c.ContainerStatuses {
				got["state "+cs.Name] = cs.State
			}
			for _, cs := range c.InitContainerStatuses {
				got["init state "+cs.Name] = cs.State
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("what the driver reads (-corev1.Pod +Pod):\n%s", diff)
			}
			if got := Classify(c, "executor"); got != tc.state {
				t.Errorf("Classify = %s, want %s", got, tc.state)
			}
		})
	}
}

// TestNewPodSharesContainers: pods whose containers have equal names and
// memory limits (an application's executors all do) share one list of
// them, which says what each pod's are; different limits stay apart.
func TestNewPodSharesContainers(t *testing.T) {
	pod := func(memory string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "executor",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse(memory), corev1.ResourceCPU: resource.MustParse("2")}}}}}}
	}
	a, b, c := NewPod(pod("1408Mi")).Containers, NewPod(pod("1408Mi")).Containers, NewPod(pod("2Gi")).Containers
	if &a[0] != &b[0] {
		t.Error("two pods with the same containers keep a list each")
	}
	if &a[0] == &c[0] {
		t.Error("pods with different limits share a list")
	}
	want := [][]Container{{{"executor", "1408Mi"}}, {{"executor", "1408Mi"}}, {{"executor", "2Gi"}}}
	if diff := cmp.Diff(want, [][]Container{a, b, c}); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
}

// TestPodsShareTheirShape: the Pods of running executors, each decoded on
// its own as the watch decodes them, share their containers, container
// statuses and conditions, and keep at most 512 bytes of heap each (about
// 370; 1,900 for the trimmed corev1.Pod cached before, 3,750 when that
// kept its own conditions, times included).
func TestPodsShareTheirShape(t *testing.T) {
	const n = 2000
	base := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	raw := make([][]byte, n)
	for i := range raw {
		b, err := runningExecutorPod(i+1, base.Add(time.Duration(i)*time.Millisecond)).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = b
	}
	decode := func(b []byte) *corev1.Pod {
		var p corev1.Pod
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	// The tables start with this shape, whatever ran before.
	NewPod(decode(raw[0]))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pods := make([]*Pod, n)
	for i, b := range raw {
		pods[i] = NewPod(decode(b))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perPod := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	runtime.KeepAlive(pods)
	runtime.KeepAlive(raw)

	for _, p := range pods[1:] {
		if &p.Containers[0] != &pods[0].Containers[0] || &p.ContainerStatuses[0] != &pods[0].ContainerStatuses[0] ||
			&p.Conditions[0] != &pods[0].Conditions[0] {
			t.Fatalf("pod %s keeps its own containers, statuses or conditions", p.Name)
		}
	}
	t.Logf("%d bytes of heap a pod", perPod)
	if perPod > 512 {
		t.Errorf("a running executor pod keeps %d bytes of heap, want at most 512", perPod)
	}
}

// TestPodsShareOnlyEqualShapes: pods share a part only when what the
// driver reads of it is equal; an ended container's status stays the pod's
// own.
func TestPodsShareOnlyEqualShapes(t *testing.T) {
	now := time.Now()
	a := NewPod(runningExecutorPod(1, now))
	waiting := runningExecutorPod(2, now)
	waiting.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	waiting.Status.Conditions[2].Status = corev1.ConditionFalse
	b := NewPod(waiting)
	ended := runningExecutorPod(3, now)
	ended.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	c, d := NewPod(ended), NewPod(ended)
	if &a.ContainerStatuses[0] == &b.ContainerStatuses[0] || &a.Conditions[0] == &b.Conditions[0] {
		t.Error("a running and a waiting pod share their statuses or conditions")
	}
	if &c.ContainerStatuses[0] == &d.ContainerStatuses[0] {
		t.Error("two pods with an ended container share its status")
	}
	if diff := cmp.Diff(waiting.Status.ContainerStatuses[0].State, b.ContainerStatuses[0].State); diff != "" {
		t.Errorf("waiting state (-corev1.Pod +Pod):\n%s", diff)
	}
}

// runningExecutorPod is executor id's pod as the API server shows it once
// it runs: drover's labels and annotations, the executor container with its
// environment and mounts, the kubelet's five conditions.
func runningExecutorPod(id int, at time.Time) *corev1.Pod {
	ts := metav1.NewTime(at)
	name := fmt.Sprintf("drover-scale-adaptive-exec-%d", id)
	started := true
	var env []corev1.EnvVar
	for _, k := range []string{"SPARK_EXECUTOR_ID", "SPARK_APPLICATION_ID", "SPARK_DRIVER_URL", "SPARK_EXECUTOR_CORES", "SPARK_EXECUTOR_MEMORY", "SPARK_EXECUTOR_POD_NAME", "SPARK_EXECUTOR_POD_IP"} {
		env = append(env, corev1.EnvVar{Name: k, Value: fmt.Sprintf("%s-%d", strings.ToLower(k), id)})
	}
	var conds []corev1.PodCondition
	for _, ct := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		conds = append(conds, corev1.PodCondition{Type: ct, Status: corev1.ConditionTrue, LastTransitionTime: ts})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "spark", UID: types.UID(fmt.Sprintf("0b9c7a52-8d1e-4f7a-9c3b-%012d", id)), ResourceVersion: strconv.Itoa(1000 + id),
			CreationTimestamp: ts,
			Labels: map[string]string{LabelAppID: "drover-scale-adaptive", LabelRole: RoleExecutor,
				LabelExecutorID: strconv.Itoa(id), LabelAppName: "scale", "spark-resource-profile-id": "0"},
			Annotations: map[string]string{"drover.io/owner": "driver"},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("kwok-node-%d", id%20), RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "spark-kubernetes-executor", Image: "drover-sim:latest", Args: []string{"executor"}, Env: env,
				VolumeMounts: []corev1.VolumeMount{{Name: "spark-conf-volume-exec", MountPath: "/opt/spark/conf"}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1408Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1408Mi")},
				},
			}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.%d.%d", id/250, id%250), HostIP: "10.1.0.1", StartTime: &ts,
			Conditions: conds,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "spark-kubernetes-executor", Image: "drover-sim:latest",
				ImageID: "docker://drover-sim", ContainerID: fmt.Sprintf("kwok://%d", id), Ready: true, Started: &started,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}}}},
		},
	}
}
