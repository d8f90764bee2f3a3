package lifecycle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

const container = "executor"

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// podBuilder builds executor pods: pod(3).phase(corev1.PodFailed).
// terminated(container, 137, "OOMKilled").obj().
type podBuilder struct{ p *corev1.Pod }

func pod(id executorid.ID) *podBuilder {
	return &podBuilder{p: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("app-exec-%d", id),
			Namespace: "default",
			Labels: map[string]string{
				snapshot.LabelAppID:      "app",
				snapshot.LabelRole:       snapshot.RoleExecutor,
				snapshot.LabelExecutorID: id.String(),
			},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeName:      "node-1",
			Containers: []corev1.Container{{
				Name:  container,
				Image: "app:1",
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				},
			}},
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: container}},
		},
	}}
}

func (b *podBuilder) label(k, v string) *podBuilder {
	b.p.Labels[k] = v
	return b
}

func (b *podBuilder) phase(ph corev1.PodPhase) *podBuilder {
	b.p.Status.Phase = ph
	return b
}

// running makes the pod run and ready.
func (b *podBuilder) running() *podBuilder {
	b.p.Status.Phase = corev1.PodRunning
	b.container(container).State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	b.cond(corev1.PodReady, corev1.ConditionTrue, "", "")
	b.cond(corev1.ContainersReady, corev1.ConditionTrue, "", "")
	return b
}

// container returns the status of a container, adding it (to the spec
// too) if the pod lacks it.
func (b *podBuilder) container(name string) *corev1.ContainerStatus {
	for i := range b.p.Status.ContainerStatuses {
		if b.p.Status.ContainerStatuses[i].Name == name {
			return &b.p.Status.ContainerStatuses[i]
		}
	}
	b.p.Spec.Containers = append(b.p.Spec.Containers, corev1.Container{Name: name, Image: name + ":1"})
	b.p.Status.ContainerStatuses = append(b.p.Status.ContainerStatuses, corev1.ContainerStatus{Name: name})
	return &b.p.Status.ContainerStatuses[len(b.p.Status.ContainerStatuses)-1]
}

func (b *podBuilder) terminated(name string, code int32, reason string) *podBuilder {
	b.container(name).State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
	return b
}

// termMessage sets the executor container's termination message.
func (b *podBuilder) termMessage(msg string) *podBuilder {
	b.container(container).State.Terminated.Message = msg
	return b
}

// waiting makes the executor container wait with reason and msg.
func (b *podBuilder) waiting(reason, msg string) *podBuilder {
	b.container(container).State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	return b
}

// unschedulable makes the pod one the scheduler cannot place.
func (b *podBuilder) unschedulable(msg string) *podBuilder {
	b.p.Spec.NodeName = ""
	b.p.Status.ContainerStatuses = nil
	return b.cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, msg)
}

func (b *podBuilder) cond(t corev1.PodConditionType, s corev1.ConditionStatus, reason, msg string) *podBuilder {
	c := corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg}
	for i := range b.p.Status.Conditions {
		if b.p.Status.Conditions[i].Type == t {
			b.p.Status.Conditions[i] = c
			return b
		}
	}
	b.p.Status.Conditions = append(b.p.Status.Conditions, c)
	return b
}

// status sets the pod's status reason and message.
func (b *podBuilder) status(reason, msg string) *podBuilder {
	b.p.Status.Reason, b.p.Status.Message = reason, msg
	return b
}

func (b *podBuilder) deleting() *podBuilder {
	ts := metav1.NewTime(t0)
	b.p.DeletionTimestamp = &ts
	return b
}

func (b *podBuilder) noMemoryLimit() *podBuilder {
	b.p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.p }

// snap classifies pods into a snapshot taken at at.
func snap(at time.Time, pods ...*podBuilder) snapshot.Snapshot {
	objs := make([]*snapshot.Pod, len(pods))
	for i, b := range pods {
		objs[i] = snapshot.NewPod(b.obj())
	}
	return snapshot.New(objs, container, at)
}

func testOptions() Options {
	o := DefaultOptions()
	o.ContainerName = container
	return o
}

// shape returns actions without their messages, for comparing with
// cmp.Diff, and the messages joined by newlines, for substring checks.
func shape(actions []Action) ([]Action, string) {
	var out []Action
	var text []string
	for _, a := range actions {
		switch a := a.(type) {
		case RemoveExecutor:
			text = append(text, a.Reason.String())
			// Causes are checked where a test names them.
			a.Reason.Message, a.Reason.Cause = "", ""
			out = append(out, a)
		case Warn:
			text = append(text, a.Message)
			a.Message = ""
			out = append(out, a)
		case FailApplication:
			if a.Err != nil {
				text = append(text, a.Err.Error())
			}
			out = append(out, FailApplication{})
		default:
			out = append(out, a)
		}
	}
	return out, strings.Join(text, "\n")
}

// check compares actions with want, ignoring messages, and checks that the
// messages contain each of texts.
func check(t *testing.T, got, want []Action, texts ...string) {
	t.Helper()
	gotShape, gotText := shape(got)
	wantShape, _ := shape(want)
	if diff := cmp.Diff(wantShape, gotShape); diff != "" {
		t.Errorf("actions (-want +got):\n%s\nmessages:\n%s", diff, gotText)
	}
	for _, s := range texts {
		if !strings.Contains(gotText, s) {
			t.Errorf("messages lack %q:\n%s", s, gotText)
		}
	}
}
