package podsource

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "executor", Image: "drover:1", ImageID: "sha",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
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
					"reason": p.Status.Reason, "message": p.Status.Message, "conditions": p.Status.Conditions,
				}
				for _, ct := range p.Spec.Containers {
					m["limit "+ct.Name] = ct.Resources.Limits.Memory().String()
				}
				for _, cs := range p.Status.ContainerStatuses {
					m["state "+cs.Name] = cs.State
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
