//go:build integration

package procnode_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/testenv"
)

// The process node on the real control plane: an API server and etcd, one
// process node, pods bound to it by name (no scheduler).
var cluster = &testenv.Shared{Options: testenv.Options{
	ProcessNodes:          1,
	ProcessNodeBackoff:    time.Second,
	ProcessNodeMaxBackoff: 10 * time.Second,
}}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the shared control plane:", err)
		code = 1
	}
	os.Exit(code)
}

// namespace makes a namespace for t with its default service account,
// which pod admission needs and no controller manager creates here.
func namespace(t *testing.T, e *testenv.Env) string {
	t.Helper()
	ns := e.NewNamespace(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := e.Client.CoreV1().ServiceAccounts(ns).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// onFailurePod runs script in a shell with restartPolicy OnFailure on the
// process node.
func onFailurePod(e *testenv.Env, ns, name string, grace int64, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:                      e.ProcessNodeNames[0],
			RestartPolicy:                 corev1.RestartPolicyOnFailure,
			TerminationGracePeriodSeconds: ptr.To(grace),
			AutomountServiceAccountToken:  ptr.To(false),
			Containers:                    []corev1.Container{{Name: "main", Image: "procnode", Command: []string{"/bin/sh", "-c", script}}},
		},
	}
}

// waitPod polls pod ns/name until ok says so, failing t after timeout.
func waitPod(t *testing.T, e *testenv.Env, ns, name, what string, timeout time.Duration, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var last *corev1.Pod
	for {
		p, err := e.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if ok(p) {
				return p
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s/%s not %s after %s; last seen: %+v", ns, name, what, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func runningWith(restarts int32) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		s := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodRunning && len(s) == 1 && s[0].RestartCount == restarts && s[0].State.Running != nil
	}
}

// TestProcessNodeActiveDeadline: spec.activeDeadlineSeconds set on a
// running pod (the API lets it be set or lowered) ends the pod as a
// kubelet does: SIGTERM, SIGKILL after the grace period, no restart
// whatever the policy, phase Failed with reason DeadlineExceeded. This is
// how a driver out of restarts ends its pod for good.
func TestProcessNodeActiveDeadline(t *testing.T) {
	e := cluster.Env(t)
	ns := namespace(t, e)
	pods := e.Client.CoreV1().Pods(ns)
	pod := onFailurePod(e, ns, "driver", 2, "echo run; trap 'echo term' TERM; while :; do sleep 1; done")
	if _, err := pods.Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, e, ns, "driver", "running", time.Minute, runningWith(0))
	// Active for at least a second by the API's startTime. Real time: the
	// API server and the node agent are real processes.
	time.Sleep(time.Until(p.Status.StartTime.Add(1100 * time.Millisecond)))

	set := time.Now()
	if _, err := pods.Patch(t.Context(), "driver", types.MergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, e, ns, "driver", "failed", time.Minute, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	took := time.Since(set)
	if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("pod reason %q, message %q; want the kubelet's DeadlineExceeded", p.Status.Reason, p.Status.Message)
	}
	cs := p.Status.ContainerStatuses[0]
	if term := cs.State.Terminated; cs.RestartCount != 0 || term == nil || term.ExitCode != 137 {
		t.Errorf("container: %d restarts, state %+v; want none, killed after ignoring SIGTERM (exit code 137)", cs.RestartCount, cs.State)
	}
	if took < 2*time.Second {
		t.Errorf("failed %s after the deadline was set; want the 2s grace period first", took)
	}
	logs, err := e.ProcessNode.Logs(ns, "driver")
	if err != nil || strings.Count(string(logs), "run\n") != 1 || !strings.HasSuffix(string(logs), "term\n") {
		t.Errorf("logs = %q, %v; want one run, told to stop (SIGTERM)", logs, err)
	}
	// Another update of the ended pod changes nothing.
	if _, err := pods.Patch(t.Context(), "driver", types.MergePatchType, []byte(`{"metadata":{"labels":{"seen":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // real time: the node agent, a real process, would restart it meanwhile
	if p, err := pods.Get(t.Context(), "driver", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodFailed || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("after an update of the ended pod: %v, %v", p.Status, err)
	}
}

// TestProcessNodeSignal: an end-to-end test crashes a container with
// Env.SignalContainer: SIGKILL, and the OnFailure pod's container starts
// again in the same pod with restart count 1 and the kill (exit code 137)
// as its last state; SIGSTOP and SIGCONT freeze and thaw it.
func TestProcessNodeSignal(t *testing.T) {
	e := cluster.Env(t)
	ns := namespace(t, e)
	pod := onFailurePod(e, ns, "driver", 10, "echo run; exec sleep 1000")
	if _, err := e.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, e, ns, "driver", "running", time.Minute, runningWith(0))
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGCONT} {
		if err := e.SignalContainer(ns, "driver", "main", sig); err != nil {
			t.Fatalf("%v: %v", sig, err)
		}
	}
	if err := e.SignalContainer(ns, "driver", "main", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	q := waitPod(t, e, ns, "driver", "running again", time.Minute, runningWith(1))
	cs := q.Status.ContainerStatuses[0]
	last := cs.LastTerminationState.Terminated
	if last == nil || last.ExitCode != 137 || last.Reason != "Error" || last.ContainerID != p.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("last termination = %+v; want the first run's, exit code 137, reason Error", last)
	}
	if q.UID != p.UID || q.Status.PodIP != p.Status.PodIP {
		t.Errorf("restarted in pod %s (%s), want the same pod %s (%s)", q.UID, q.Status.PodIP, p.UID, p.Status.PodIP)
	}
	logs, _ := e.ProcessNode.Logs(ns, "driver")
	if strings.Count(string(logs), "run\n") != 2 {
		t.Errorf("logs = %q, want 2 runs", logs)
	}
	if err := e.SignalContainer(ns, "nosuch", "main", syscall.SIGKILL); err == nil {
		t.Error("signalling a pod that never ran succeeded")
	}
}
