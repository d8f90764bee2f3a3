//go:build integration && realnode

package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRealNodeRunsAPod runs a pod of the probe image to completion on a
// real kubelet with containerd and runc, and reads its log through the API
// server (which reaches the kubelet with its client certificate). It runs
// inside the run's network namespace: make realnode, or
// hack/realnode-netns.sh around the test binary.
func TestRealNodeRunsAPod(t *testing.T) {
	if _, err := RunNetNSAddr(); err != nil && !RealNodeRequired() {
		t.Skipf("not in the run's network namespace (run make realnode): %v", err)
	}
	e := New(t, Options{Scheduler: true, ControllerManager: true})
	n := NewRealNode(t, e, "realnode-0")
	ns := e.NewNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{RealNodeLabel: "true"},
			Tolerations:   []corev1.Toleration{RealNodeToleration},
			Containers: []corev1.Container{{
				Name:            "probe",
				Image:           ProbeImage,
				ImagePullPolicy: corev1.PullNever,
				Args:            []string{"echo", "hello from a real node"},
			}},
		},
	}
	began := time.Now()
	if _, err := e.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *corev1.Pod
	for {
		p, err := e.Client.CoreV1().Pods(ns).Get(ctx, "hello", metav1.GetOptions{})
		if err == nil {
			last = p
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("pod not finished: %+v\n--- kubelet ---\n%s\n--- containerd ---\n%s", last.Status, n.Logs(Kubelet, 40), n.Logs("containerd", 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if last.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s: %+v\n--- kubelet ---\n%s", last.Status.Phase, last.Status, n.Logs(Kubelet, 40))
	}
	t.Logf("pod Succeeded on %s (%s) %s after its creation", last.Spec.NodeName, last.Status.PodIP, time.Since(began).Round(time.Millisecond))
	logs, err := e.Client.CoreV1().Pods(ns).GetLogs("hello", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the pod's log through the API server: %v", err)
	}
	if got := strings.TrimSpace(string(logs)); got != "hello from a real node" {
		t.Errorf("log = %q, want %q", got, "hello from a real node")
	}
}
