package procnode

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeClockAgent runs an agent on a fake clock against a fake clientset.
func fakeClockAgent(t *testing.T, cidr string) (*Agent, kubernetes.Interface, *clocktesting.FakeClock) {
	t.Helper()
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, err := New(Config{
		Client: client, NodeNames: []string{"n1"}, Dir: t.TempDir(),
		PodCIDR: netip.MustParsePrefix(cidr),
		Clock:   clk,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	return a, client, clk
}

func setDeadline(t *testing.T, client kubernetes.Interface, name string, seconds int) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"activeDeadlineSeconds":%d}}`, seconds)
	if _, err := client.CoreV1().Pods("ns").Patch(t.Context(), name, k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deadlineExceeded is the status a kubelet gives a pod past its deadline.
type podEnd struct {
	Phase           corev1.PodPhase
	Reason, Message string
}

var wantDeadlineExceeded = podEnd{corev1.PodFailed, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"}

// TestAgentActiveDeadline: a deadline set on a running pod, then lowered
// below the time it has been active, kills its containers as a kubelet
// does (SIGTERM, SIGKILL after the grace period), restarts nothing though
// the policy is OnFailure, and fails the pod with reason DeadlineExceeded.
func TestAgentActiveDeadline(t *testing.T) {
	a, client, clk := fakeClockAgent(t, "127.82.0.0/16")
	p := pod("slow", 30, "/bin/sh", "-c", "echo run; trap 'echo term' TERM; while :; do sleep 1; done")
	p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	pods := client.CoreV1().Pods("ns")
	if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func() *corev1.Pod {
		t.Helper()
		p, err := pods.Get(t.Context(), "slow", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	waitFor(t, "running", func() (bool, error) { return get().Status.Phase == corev1.PodRunning, nil })
	if st := get().Status.StartTime; st == nil || !st.Time.Equal(clk.Now()) {
		t.Fatalf("startTime = %v, want the agent clock's %v", st, clk.Now())
	}

	setDeadline(t, client, "slow", 60)
	waitFor(t, "the deadline timer", func() (bool, error) { return clk.HasWaiters(), nil })
	clk.Step(59 * time.Second)
	time.Sleep(100 * time.Millisecond) // real time: the container is a real process, outside any synctest bubble
	if err := a.Signal("ns", "slow", "c", 0); err != nil || get().Status.Phase != corev1.PodRunning {
		t.Fatalf("before its deadline: phase %s, signal 0: %v; want still running", get().Status.Phase, err)
	}

	// Lowered below the 59s the pod has been active: it ends at once.
	setDeadline(t, client, "slow", 30)
	waitFor(t, "SIGTERM", func() (bool, error) {
		logs, err := a.Logs("ns", "slow")
		return strings.Contains(string(logs), "term\n"), err
	})
	if err := a.Signal("ns", "slow", "c", 0); err != nil {
		t.Fatalf("the container ignoring SIGTERM ended before its grace period: %v", err)
	}
	clk.Step(30 * time.Second) // the grace period: SIGKILL
	waitFor(t, "pod fails", func() (bool, error) { return get().Status.Phase == corev1.PodFailed, nil })
	got := get()
	if diff := cmp.Diff(wantDeadlineExceeded, podEnd{got.Status.Phase, got.Status.Reason, got.Status.Message}); diff != "" {
		t.Errorf("pod status (-want,+got):\n%s", diff)
	}
	cs := got.Status.ContainerStatuses[0]
	if term := cs.State.Terminated; cs.RestartCount != 0 || term == nil || term.ExitCode != 137 {
		t.Errorf("container: %d restarts, state %+v; want no restart, exit code 137", cs.RestartCount, cs.State)
	}
	if logs, _ := a.Logs("ns", "slow"); strings.Count(string(logs), "run\n") != 1 {
		t.Errorf("logs = %q, want one run", logs)
	}
}

// TestAgentActiveDeadlineWhileBackingOff: a deadline passing while a
// container waits in CrashLoopBackOff ends the pod without starting it
// again.
func TestAgentActiveDeadlineWhileBackingOff(t *testing.T) {
	a, client, clk := fakeClockAgent(t, "127.83.0.0/16")
	p := pod("crashy", 30, "/bin/sh", "-c", "echo run; exit 3")
	p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	pods := client.CoreV1().Pods("ns")
	if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "back-off after the first restart", func() (bool, error) {
		p, err := pods.Get(t.Context(), "crashy", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, err
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount == 1 && cs.State.Waiting != nil, nil
	})
	setDeadline(t, client, "crashy", 5)
	time.Sleep(100 * time.Millisecond) // real time: the agent arms its timer; its pods are real processes
	clk.Step(5 * time.Second)          // the deadline, half the 10s back-off
	var got *corev1.Pod
	waitFor(t, "pod fails", func() (bool, error) {
		var err error
		got, err = pods.Get(t.Context(), "crashy", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodFailed, err
	})
	if diff := cmp.Diff(wantDeadlineExceeded, podEnd{got.Status.Phase, got.Status.Reason, got.Status.Message}); diff != "" {
		t.Errorf("pod status (-want,+got):\n%s", diff)
	}
	clk.Step(time.Hour)
	time.Sleep(100 * time.Millisecond) // real time: a restart would start a real process
	if logs, _ := a.Logs("ns", "crashy"); string(logs) != "run\nrun\n" {
		t.Errorf("logs = %q, want the 2 runs before the deadline", logs)
	}
}

// TestAgentSignal: SIGKILL crashes a container, which its restart policy
// starts again with exit code 137 as its last state; SIGSTOP freezes it,
// SIGCONT thaws it.
func TestAgentSignal(t *testing.T) {
	a, client := startAgent(t)
	p := pod("victim", 30, "/bin/sh", "-c", "echo run; exec sleep 1000")
	p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	pods := client.CoreV1().Pods("ns")
	if err := a.Signal("ns", "victim", "c", syscall.SIGKILL); err == nil {
		t.Error("signalling a pod that never ran succeeded")
	}
	if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var cur *corev1.Pod
	runningWith := func(restarts int32) func() (bool, error) {
		return func() (bool, error) {
			var err error
			cur, err = pods.Get(t.Context(), "victim", metav1.GetOptions{})
			if err != nil || len(cur.Status.ContainerStatuses) == 0 {
				return false, err
			}
			cs := cur.Status.ContainerStatuses[0]
			return cs.RestartCount == restarts && cs.State.Running != nil, nil
		}
	}
	waitFor(t, "running", runningWith(0))
	if runtime.GOOS == "linux" {
		pid := pidOf(t, cur)
		if err := a.Signal("ns", "victim", "", syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "stopped", func() (bool, error) { return procState(pid) == "T", nil })
		if err := a.Signal("ns", "victim", "c", syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "thawed", func() (bool, error) { return procState(pid) == "S", nil })
	}
	if err := a.Signal("ns", "victim", "c", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "restarted", runningWith(1))
	last := cur.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 137 || last.Signal != 9 || last.Reason != "Error" {
		t.Errorf("last state = %+v, want exit code 137 (signal 9), reason Error", last)
	}
	if err := a.Signal("ns", "victim", "nosuch", syscall.SIGKILL); err == nil {
		t.Error("signalling an unknown container succeeded")
	}
}

func pidOf(t *testing.T, p *corev1.Pod) int {
	t.Helper()
	var pid int
	if _, err := fmt.Sscanf(p.Status.ContainerStatuses[0].ContainerID, "procnode://%d", &pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// procState is the state letter of process pid in /proc (R, S, T, …).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+3 <= len(s) {
		return s[i+2 : i+3]
	}
	return ""
}
