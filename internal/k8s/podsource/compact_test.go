package podsource

import (
	"fmt"
	"reflect"
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

	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// TestCompactKeepsWhatTheDriverReads: a compacted pod classifies as the
// full one does and keeps every field the allocator and the lifecycle
// read, while the bulk of a decoded pod (environment, volumes, mounts,
// annotations, managed fields, images) is gone.
func TestCompactKeepsWhatTheDriverReads(t *testing.T) {
	full := func(mutate func(p *corev1.Pod)) *corev1.Pod {
		now := metav1.Now()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "app-exec-1", Namespace: ns, UID: "u1", ResourceVersion: "42", CreationTimestamp: now,
				Labels:          map[string]string{snapshot.LabelExecutorID: "1", snapshot.LabelKueueQueue: "q"},
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
	testCases := map[string]*corev1.Pod{
		"running": full(nil),
		"gated": full(func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: snapshot.GateKueue}}
		}),
		"unschedulable": full(func(p *corev1.Pod) {
			p.Spec.NodeName = ""
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
				Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes: Insufficient memory"}}}
		}),
		"image pull": full(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}
		}),
		"OOMKilled": full(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
		}),
		"exited in a running pod": full(func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "panic"}}
		}),
		"evicted": full(func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"}
		}),
		"deleted": full(func(p *corev1.Pod) {
			ts := metav1.Now()
			p.DeletionTimestamp = &ts
			p.Status.Phase = corev1.PodPending
		}),
	}
	for name, p := range testCases {
		t.Run(name, func(t *testing.T) {
			c := Compact(p)
			if got, want := snapshot.Classify(c, "executor"), snapshot.Classify(p, "executor"); got != want {
				t.Errorf("compact pod classifies as %s, the full one as %s", got, want)
			}
			// What the driver reads, read from both.
			read := func(p *corev1.Pod) map[string]any {
				m := map[string]any{
					"name": p.Name, "namespace": p.Namespace, "uid": p.UID, "rv": p.ResourceVersion, "labels": p.Labels,
					"created": p.CreationTimestamp, "deleted": p.DeletionTimestamp, "node": p.Spec.NodeName,
					"gates": p.Spec.SchedulingGates, "restart": p.Spec.RestartPolicy, "phase": p.Status.Phase,
					"reason": p.Status.Reason, "message": p.Status.Message,
				}
				// Conditions without their times; nothing reads them.
				for _, c := range p.Status.Conditions {
					m["condition "+string(c.Type)] = []string{string(c.Status), c.Reason, c.Message}
				}
				for _, ct := range p.Spec.Containers {
					m["limit "+ct.Name] = ct.Resources.Limits.Memory().String()
				}
				for _, cs := range p.Status.ContainerStatuses {
					st := cs.State
					if st.Running != nil {
						st.Running = &corev1.ContainerStateRunning{} // its start time is not read
					}
					m["state "+cs.Name] = st
				}
				return m
			}
			if diff := cmp.Diff(read(p), read(c)); diff != "" {
				t.Errorf("what the driver reads (-full +compact):\n%s", diff)
			}
			ct := c.Spec.Containers[0]
			dropped := map[string]bool{
				"annotations": c.Annotations != nil, "managed fields": c.ManagedFields != nil, "owners": c.OwnerReferences != nil,
				"volumes": c.Spec.Volumes != nil, "env": ct.Env != nil, "mounts": ct.VolumeMounts != nil, "image": ct.Image != "",
				"args": ct.Args != nil, "requests": ct.Resources.Requests != nil, "pod IP": c.Status.PodIP != "",
			}
			for what, kept := range dropped {
				if kept {
					t.Errorf("the compact pod keeps its %s", what)
				}
			}
		})
	}
}

// TestCompactSharesLimits: pods whose containers have equal limits share
// one map of them (an application's executors all do), which says what
// each pod's does; different limits stay apart.
func TestCompactSharesLimits(t *testing.T) {
	pod := func(memory string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "executor",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse(memory), corev1.ResourceCPU: resource.MustParse("2")}}}}}}
	}
	limits := func(p *corev1.Pod) corev1.ResourceList { return Compact(p).Spec.Containers[0].Resources.Limits }
	a, b, c := limits(pod("1408Mi")), limits(pod("1408Mi")), limits(pod("2Gi"))
	same := func(x, y corev1.ResourceList) bool {
		return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	if !same(a, b) {
		t.Error("two pods with the same limits keep a map each")
	}
	if same(a, c) {
		t.Error("pods with different limits share a map")
	}
	for _, tc := range []struct {
		got  corev1.ResourceList
		want string
	}{{a, "1408Mi"}, {b, "1408Mi"}, {c, "2Gi"}} {
		if diff := cmp.Diff(tc.want, tc.got.Memory().String()); diff != "" {
			t.Errorf("memory limit (-want +got):\n%s", diff)
		}
	}
}

// TestCompactPodsShareTheirShape: the compact pods of running executors,
// each decoded on its own as the watch decodes them, share their
// containers, container statuses and conditions, and keep at most 2,300
// bytes of heap each (about 1,900; 3,750 when each kept its own, its
// conditions' times included).
func TestCompactPodsShareTheirShape(t *testing.T) {
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
	Compact(decode(raw[0]))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pods := make([]*corev1.Pod, n)
	for i, b := range raw {
		pods[i] = Compact(decode(b))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perPod := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	runtime.KeepAlive(pods)
	runtime.KeepAlive(raw)

	for _, p := range pods[1:] {
		if &p.Spec.Containers[0] != &pods[0].Spec.Containers[0] || &p.Status.ContainerStatuses[0] != &pods[0].Status.ContainerStatuses[0] ||
			&p.Status.Conditions[0] != &pods[0].Status.Conditions[0] {
			t.Fatalf("pod %s keeps its own containers, statuses or conditions", p.Name)
		}
	}
	if perPod > 2300 {
		t.Errorf("a compact running executor pod keeps %d bytes of heap, want at most 2300", perPod)
	}
}

// TestCompactSharesOnlyEqualShapes: pods share a part only when what the
// driver reads of it is equal; an ended container's status stays the pod's
// own.
func TestCompactSharesOnlyEqualShapes(t *testing.T) {
	now := time.Now()
	a := Compact(runningExecutorPod(1, now))
	waiting := runningExecutorPod(2, now)
	waiting.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	waiting.Status.Conditions[2].Status = corev1.ConditionFalse
	b := Compact(waiting)
	ended := runningExecutorPod(3, now)
	ended.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	c, d := Compact(ended), Compact(ended)
	if &a.Status.ContainerStatuses[0] == &b.Status.ContainerStatuses[0] || &a.Status.Conditions[0] == &b.Status.Conditions[0] {
		t.Error("a running and a waiting pod share their statuses or conditions")
	}
	if &c.Status.ContainerStatuses[0] == &d.Status.ContainerStatuses[0] {
		t.Error("two pods with an ended container share its status")
	}
	if diff := cmp.Diff(waiting.Status.ContainerStatuses[0].State, b.Status.ContainerStatuses[0].State); diff != "" {
		t.Errorf("waiting state (-full +compact):\n%s", diff)
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
			Name: name, Namespace: ns, UID: types.UID(fmt.Sprintf("0b9c7a52-8d1e-4f7a-9c3b-%012d", id)), ResourceVersion: strconv.Itoa(1000 + id),
			CreationTimestamp: ts,
			Labels: map[string]string{snapshot.LabelAppID: "drover-scale-adaptive", snapshot.LabelRole: snapshot.RoleExecutor,
				snapshot.LabelExecutorID: strconv.Itoa(id), snapshot.LabelAppName: "scale", "spark-resource-profile-id": "0"},
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
