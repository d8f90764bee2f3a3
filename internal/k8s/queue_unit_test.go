package k8s

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/k8s/allocator"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/master"
)

// The driver pod's status follows the rounds: a cap at once, executors a
// queue holds once they have waited 5 s (most are admitted within
// milliseconds), nothing once they are admitted; and
// drover.kubernetes.queue.timeout fails an application whose executors all
// waited that long.
func TestQueueWatch(t *testing.T) {
	driver := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-driver", Namespace: "spark"}}
	cs := fake.NewClientset(driver)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	var failed error
	c := &Cluster{clock: clk, log: slog.New(slog.DiscardHandler), ns: "spark", cs: cs, driverPod: driver,
		app: master.App{Fail: func(err error) { failed = err }}, allocCtx: context.Background(), haltAlloc: func() {}}
	w := &queueWatch{c: c, q: podspec.Queue{System: podspec.QueueKueue, Name: "team-a"}, timeout: 10 * time.Minute,
		exists: func(context.Context) (bool, error) { return true, nil }}
	status := func() string {
		t.Helper()
		c.tracked.Wait()
		p, err := cs.CoreV1().Pods("spark").Get(context.Background(), "app-driver", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Annotations[podspec.AnnotationExecutorsHeld]
	}
	gated := allocator.Plan{Counts: allocator.Counts{Target: 3, Pending: 3, Gated: 3, GatedBy: "queue team-a"}}
	admitted := allocator.Plan{Counts: allocator.Counts{Target: 3, Running: 3}}
	capped := allocator.Plan{Counts: allocator.Counts{Target: 3, Running: 1}, Limit: allocator.Limit{Held: 2, Reachable: 1, Cause: "ResourceQuota pods3"}}

	steps := []struct {
		after time.Duration
		plan  allocator.Plan
		want  string
	}{
		{0, gated, ""},
		{4 * time.Second, gated, ""},
		{2 * time.Second, gated, "waiting for queue admission (queue team-a)"},
		{time.Second, admitted, ""},
		{time.Second, capped, "2 held back by ResourceQuota pods3"},
		{time.Second, gated, ""},
		{6 * time.Second, gated, "waiting for queue admission (queue team-a)"},
	}
	for i, s := range steps {
		clk.Step(s.after)
		w.onRound(s.plan)
		if got := status(); got != s.want {
			t.Errorf("step %d: the driver pod says %q, want %q", i, got, s.want)
		}
	}
	if failed != nil {
		t.Fatalf("failed early: %v", failed)
	}
	clk.Step(10 * time.Minute)
	w.onRound(gated)
	c.tracked.Wait()
	if failed == nil || !errors.Is(failed, ErrQueue) || !strings.Contains(failed.Error(), "3 executor pods waited 10m6s for admission and none runs (drover.kubernetes.queue.timeout=10m0s)") {
		t.Errorf("after the timeout: failed with %v", failed)
	}
}
