package procnode

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestAgentCrashLoopBackOff runs a container that always fails, with the
// kubelet's back-off on a fake clock: it restarts at once, then waits in
// CrashLoopBackOff until the clock has moved 10s, then 20s.
func TestAgentCrashLoopBackOff(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, err := New(Config{
		Client: client, NodeNames: []string{"n1"}, Dir: t.TempDir(),
		PodCIDR: netip.MustParsePrefix("127.79.0.0/16"),
		Clock:   clk,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)

	p := pod("crashy", 30, "/bin/sh", "-c", "echo run; exit 3")
	p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	pods := client.CoreV1().Pods("ns")
	if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	backingOff := func(restarts int32, backoff string) {
		t.Helper()
		var cs corev1.ContainerStatus
		waitFor(t, fmt.Sprintf("back-off %s after restart %d", backoff, restarts), func() (bool, error) {
			p, err := pods.Get(t.Context(), "crashy", metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, err
			}
			cs = p.Status.ContainerStatuses[0]
			if cs.RestartCount > 0 && p.Status.Phase != corev1.PodRunning {
				t.Fatalf("phase %s while restarting, want Running", p.Status.Phase)
			}
			return cs.RestartCount == restarts && cs.State.Waiting != nil, nil
		})
		want := &corev1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: "back-off " + backoff + " restarting failed container=c pod=crashy_ns(uid-crashy)",
		}
		if diff := cmp.Diff(want, cs.State.Waiting); diff != "" {
			t.Errorf("waiting state (-want,+got):\n%s", diff)
		}
		if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 3 || last.Reason != "Error" || last.ContainerID == "" {
			t.Errorf("last state = %+v, want terminated with exit code 3, reason Error and a container ID", last)
		}
	}
	// The first exit restarts at once: the fake clock has not moved.
	backingOff(1, "10s")
	// Nothing happens until the back-off is over.
	waitFor(t, "a back-off timer", func() (bool, error) { return clk.HasWaiters(), nil })
	clk.Step(9 * time.Second)
	if !clk.HasWaiters() {
		t.Fatal("the back-off timer fired after 9s of 10s")
	}
	backingOff(1, "10s")
	clk.Step(time.Second)
	backingOff(2, "20s")
	clk.Step(20 * time.Second)
	backingOff(3, "40s")

	// A pod deleted while backing off is not started again.
	if err := pods.Delete(t.Context(), "crashy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the worker to end", func() (bool, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.workers[p.UID] == nil, nil
	})
	clk.Step(time.Hour)
	if logs, err := a.Logs("ns", "crashy"); err != nil || string(logs) != "run\nrun\nrun\nrun\n" {
		t.Errorf("logs = %q, %v; want the 4 runs before the deletion", logs, err)
	}
}

// TestAgentRestartsStartErrors: a command that cannot start is an exit
// with code 128 and reason StartError, restarted with the same back-off,
// however short.
func TestAgentRestartsStartErrors(t *testing.T) {
	client := fake.NewClientset()
	a, err := New(Config{
		Client: client, NodeNames: []string{"n1"}, Dir: t.TempDir(),
		PodCIDR:        netip.MustParsePrefix("127.80.0.0/16"),
		InitialBackoff: time.Nanosecond, MaxBackoff: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	p := pod("nocmd", 30, "/no/such/command")
	p.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pods := client.CoreV1().Pods("ns")
	if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var cs corev1.ContainerStatus
	waitFor(t, "5 restarts", func() (bool, error) {
		p, err := pods.Get(t.Context(), "nocmd", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, err
		}
		cs = p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 5 && p.Status.Phase == corev1.PodRunning, nil
	})
	if last := cs.LastTerminationState.Terminated; last == nil || last.Reason != "StartError" || last.ExitCode != 128 {
		t.Errorf("last state = %+v, want StartError with exit code 128", last)
	}
}

// TestAgentLogsOfRuns: the kubelet API serves a restarted container's
// current run, and with previous=true the run before, as kubectl logs
// [--previous] shows them; Agent.Logs keeps every run.
func TestAgentLogsOfRuns(t *testing.T) {
	client := fake.NewClientset()
	a, err := New(Config{
		Client: client, NodeNames: []string{"n1"}, Dir: t.TempDir(),
		PodCIDR:        netip.MustParsePrefix("127.81.0.0/16"),
		InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	get := func(pod, query string) (int, string) {
		req := httptest.NewRequest("GET", "/containerLogs/ns/"+pod+"/c?"+query, nil)
		req.SetPathValue("namespace", "ns")
		req.SetPathValue("pod", pod)
		req.SetPathValue("container", "c")
		rec := httptest.NewRecorder()
		a.serveLogs(rec, req)
		return rec.Code, rec.Body.String()
	}

	p := pod("runs", 30, "/bin/sh", "-c", `n=$(cat n 2>/dev/null || echo 0); n=$((n+1)); echo $n >n; echo "run $n"; [ $n -gt 2 ] || exit 1`)
	p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	pods := client.CoreV1().Pods("ns")
	if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod succeeds", func() (bool, error) {
		p, err := pods.Get(t.Context(), "runs", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded, err
	})
	type logs struct {
		Code int
		Body string
	}
	for query, want := range map[string]logs{
		"":              {200, "run 3\n"},
		"previous=true": {200, "run 2\n"},
		"follow=true":   {200, "run 3\n"},
	} {
		code, body := get("runs", query)
		if diff := cmp.Diff(want, logs{code, body}); diff != "" {
			t.Errorf("logs?%s (-want,+got):\n%s", query, diff)
		}
	}
	if all, err := a.Logs("ns", "runs"); err != nil || string(all) != "run 1\nrun 2\nrun 3\n" {
		t.Errorf("Logs = %q, %v; want every run", all, err)
	}

	// Following a run ends with it, though the container restarts at once.
	p = pod("follow", 30, "/bin/sh", "-c", `n=$(cat n 2>/dev/null || echo 0); n=$((n+1)); echo $n >n; echo "run $n"; [ $n -gt 1 ] || { sleep 1; exit 1; }; sleep 1000`)
	p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "first run's output", func() (bool, error) {
		logs, err := a.Logs("ns", "follow")
		return string(logs) == "run 1\n", err
	})
	if code, body := get("follow", "follow=true"); code != 200 || body != "run 1\n" {
		t.Errorf("following the first run: %d %q, want 200 %q", code, body, "run 1\n")
	}

	once := pod("once", 30, "/bin/sh", "-c", "echo only")
	if _, err := pods.Create(t.Context(), once, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod succeeds", func() (bool, error) {
		p, err := pods.Get(t.Context(), "once", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded, err
	})
	code, body := get("once", "previous=true")
	if want := `previous terminated container "c" in pod "once" not found`; code != 400 || !strings.Contains(body, want) {
		t.Errorf("previous logs of a container that never restarted: %d %q; want 400 %q", code, body, want)
	}
}
