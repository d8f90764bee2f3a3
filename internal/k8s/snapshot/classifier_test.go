package snapshot

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(id string, phase corev1.PodPhase, labels ...string) *Pod {
	l := map[string]string{}
	if id != "" {
		l[LabelExecutorID] = id
	}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	return NewPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "exec-" + id, Labels: l}, Status: corev1.PodStatus{Phase: phase}})
}

// TestClassifierMatchesNew: through pods added, replaced (a new object, as
// the pod cache stores every update), removed, labelled inactive or
// without an id, the classifier's snapshots equal New's.
func TestClassifierMatchesNew(t *testing.T) {
	p1, p2, p3 := pod("1", corev1.PodPending), pod("2", corev1.PodRunning), pod("3", corev1.PodPending)
	p1Running := pod("1", corev1.PodRunning)
	p3Failed := pod("3", corev1.PodFailed)
	p2Inactive := pod("2", corev1.PodRunning, LabelInactive, "true")
	noID := pod("", corev1.PodRunning)
	steps := [][]*Pod{
		{p1, p2, p3, noID},
		{p1, p2, p3, noID},        // nothing changed
		{p1Running, p2, p3},       // p1 replaced
		{p1Running, p2, p3Failed}, // p3 replaced
		{p1Running, p2Inactive},   // p3 gone, p2 inactive
		{p1Running, p2, p3},       // the old objects again
		{},
	}
	c := NewClassifier("")
	now := time.Unix(1000, 0)
	for i, pods := range steps {
		got, want := c.Snapshot(pods, now), New(pods, "", now)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("step %d: classifier's snapshot (-New +classifier):\n%s", i, diff)
		}
		if len(c.last) != len(pods) {
			t.Errorf("step %d: the classifier remembers %d pods, want the %d of this snapshot", i, len(c.last), len(pods))
		}
	}
}

func BenchmarkSnapshot(b *testing.B) {
	pods := make([]*Pod, 5000)
	for i := range pods {
		pods[i] = pod(fmt.Sprint(i+1), corev1.PodRunning, LabelAppID, "app", LabelRole, RoleExecutor)
	}
	now := time.Unix(1000, 0)
	b.Run("New", func(b *testing.B) {
		for b.Loop() {
			New(pods, "", now)
		}
	})
	b.Run("Classifier", func(b *testing.B) {
		c := NewClassifier("")
		for b.Loop() {
			c.Snapshot(pods, now)
		}
	})
}
