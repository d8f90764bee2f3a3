package podcontrol

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestFakeWithClient: with Client set, Fake carries its calls out on a fake
// clientset, so a pod watch on it sees them; a collection delete keeps to
// its phase (the allocator's pending-only deletes).
func TestFakeWithClient(t *testing.T) {
	cs := fake.NewClientset()
	f := &Fake{Client: cs}
	ctx := t.Context()
	pod := func(name, role string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"spark-role": role}},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	for _, p := range []*corev1.Pod{pod("e-1", "executor"), pod("e-2", "executor"), pod("e-3", "executor"), pod("d", "driver")} {
		if err := f.CreatePod(ctx, "spark", p); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.DeletePod(ctx, "spark", "e-1"); err != nil {
		t.Fatal(err)
	}
	if err := f.DeletePod(ctx, "spark", "gone"); err != nil {
		t.Errorf("deleting a pod already gone: %v", err)
	}
	running := pod("e-4", "executor")
	running.Status.Phase = corev1.PodRunning
	if err := f.CreatePod(ctx, "spark", running); err != nil {
		t.Fatal(err)
	}
	pending := metav1.ListOptions{LabelSelector: "spark-role=executor", FieldSelector: "status.phase=Pending"}
	if err := f.DeletePods(ctx, "spark", pending); err != nil {
		t.Fatal(err)
	}
	if err := f.DeletePods(ctx, "spark", metav1.ListOptions{LabelSelector: "spark-role=executor", FieldSelector: "status.phase=Running"}); err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Pods("spark").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range list.Items {
		left = append(left, p.Name)
	}
	if d := cmp.Diff([]string{"d"}, left); d != "" {
		t.Errorf("pods left (-want +got):\n%s", d)
	}
}
