//go:build integration

package k8s

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/master"
)

// TestDriverRestartAttemptsClaimTheirPod: each attempt claims the next
// epoch on the driver pod; an earlier attempt's fence then fails; past
// maxRestarts the attempt ends the application: the cause on the pod, its
// executors deleted, and an active deadline that makes the kubelet fail
// it for good.
func TestDriverRestartAttemptsClaimTheirPod(t *testing.T) {
	env := podEnv.Env(t)
	ns := env.NewNamespace(t)
	ctx := t.Context()
	const app = "drover-a77e3b7c0ffee000"
	pods := env.Client.CoreV1().Pods(ns)
	pending := corev1.PodSpec{NodeSelector: map[string]string{"drover.test/none": "x"}, RestartPolicy: corev1.RestartPolicyOnFailure}
	driver := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-driver", Annotations: map[string]string{podspec.AnnotationMaxRestarts: "1"}},
		Spec: *pending.DeepCopy()}
	driver.Spec.Containers = []corev1.Container{{Name: "sidecar", Image: "x"},
		{Name: "driver", Image: "x", Args: []string{"--properties-file", podspec.DriverConfFile}}}
	if _, err := pods.Create(ctx, driver, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	exec := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-exec-1",
		Labels: map[string]string{snapshot.LabelAppID: app, snapshot.LabelRole: snapshot.RoleExecutor}}, Spec: *pending.DeepCopy()}
	exec.Spec.Containers = []corev1.Container{{Name: "executor", Image: "x"}}
	if _, err := pods.Create(ctx, exec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := attemptPod{cs: env.Client, ns: ns, name: "wc-driver", appID: app, maxRestarts: 3, clock: clock.RealClock{},
		log: slog.New(slog.DiscardHandler)}
	// restarted reports, as the kubelet does, that the driver container
	// ran n times before and how the last run ended.
	restarted := func(n int32) {
		t.Helper()
		pod, err := pods.Get(ctx, "wc-driver", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sidecar"}, {Name: "driver", RestartCount: n,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}
		if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	first, err := claimAttempt(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if first.Epoch != 0 || first.Of != 2 || first.LastCause != "" || first.Number() != "1" {
		t.Errorf("first attempt %+v: want epoch 0 of 2 (the pod's max-restarts), no cause", first)
	}
	if err := first.Fence(ctx); err != nil {
		t.Errorf("the first attempt's fence, before any restart: %v", err)
	}

	restarted(1)
	second, err := claimAttempt(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if second.Epoch != 1 || second.LastCause != "exit 137, OOMKilled" || second.Number() != "2" {
		t.Errorf("second attempt %+v: want epoch 1 after exit 137, OOMKilled", second)
	}
	if err := first.Fence(ctx); !errors.Is(err, master.ErrSuperseded) {
		t.Errorf("the first attempt's fence after the second claimed the pod: %v, want ErrSuperseded", err)
	}
	if err := second.Fence(ctx); err != nil {
		t.Errorf("the second attempt's fence: %v", err)
	}

	restarted(2)
	_, err = claimAttempt(ctx, p)
	if !errors.Is(err, master.ErrNoMoreAttempts) {
		t.Fatalf("third attempt with max-restarts 1: %v, want ErrNoMoreAttempts", err)
	}
	pod, err := pods.Get(ctx, "wc-driver", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const want = "the driver failed 2 times; the last attempt (2 of 2): exit 137, OOMKilled"
	if got := pod.Annotations[podspec.AnnotationFailed]; got != want {
		t.Errorf("%s=%q, want %q", podspec.AnnotationFailed, got, want)
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d != 1 {
		t.Errorf("activeDeadlineSeconds %v, want 1", d)
	}
	if err := waitGone(ctx, env.Client.CoreV1().Pods(ns), "wc-exec-1", 30*time.Second); err != nil {
		t.Errorf("the executor pod outlived the application: %v", err)
	}
}

// waitGone waits until pod name no longer exists.
func waitGone(ctx context.Context, pods interface {
	Get(context.Context, string, metav1.GetOptions) (*corev1.Pod, error)
}, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s still there: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond): // the API server, a real clock
		}
	}
}
