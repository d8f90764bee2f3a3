package submit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/logging/logtest"
)

const (
	failedCause = "the driver failed 4 times; the last attempt (4 of 4): exit 137, OOMKilled"
	oomLine     = "driver restarted (attempt 2 of 4): exit 137, OOMKilled"
)

func oomKilled() *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}
}

// restartedPod is the running driver pod wc-driver (max-restarts 3 unless
// maxRestarts is "") whose container restarted restarts times, the last
// run ending as last says.
func restartedPod(maxRestarts string, restarts int32, last *corev1.ContainerStateTerminated) *corev1.Pod {
	p := pod(corev1.PodRunning, nil, "1")
	if maxRestarts != "" {
		p.Annotations = map[string]string{podspec.AnnotationMaxRestarts: maxRestarts}
	}
	cs := &p.Status.ContainerStatuses[0]
	cs.RestartCount = restarts
	cs.State.Running = &corev1.ContainerStateRunning{}
	if last != nil {
		cs.LastTerminationState.Terminated = last
	}
	return p
}

// gaveUp is the driver pod once its driver ran out of restarts: the run
// after the fourth attempt named the cause and the pod's deadline ended it.
func gaveUp() *corev1.Pod {
	p := restartedPod("3", 4, oomKilled())
	p.Annotations[podspec.AnnotationFailed] = failedCause
	p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
	cs := &p.Status.ContainerStatuses[0]
	cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error"}}
	return p
}

func TestRestartLine(t *testing.T) {
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"oom killed": {restartedPod("3", 1, oomKilled()), oomLine},
		"termination message's last line": {
			restartedPod("3", 2, &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "goroutine 1:\n  main.go:3\npanic: no input\n"}),
			"driver restarted (attempt 3 of 4): exit 2, Error: panic: no input",
		},
		"long message left out": {
			restartedPod("3", 1, &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: strings.Repeat("x", 121)}),
			"driver restarted (attempt 2 of 4): exit 1, Error",
		},
		"no reason":                  {restartedPod("3", 1, &corev1.ContainerStateTerminated{ExitCode: 137}), "driver restarted (attempt 2 of 4): exit 137"},
		"cause not reported":         {restartedPod("3", 1, nil), "driver restarted (attempt 2 of 4): cause not reported"},
		"no max-restarts annotation": {restartedPod("", 1, oomKilled()), "driver restarted (attempt 2): exit 137, OOMKilled"},
		"bad annotation":             {restartedPod("many", 1, oomKilled()), "driver restarted (attempt 2): exit 137, OOMKilled"},
		"last attempt":               {restartedPod("3", 3, oomKilled()), "driver restarted (attempt 4 of 4): exit 137, OOMKilled"},
		"no restart left":            {restartedPod("3", 4, oomKilled()), "driver failed (attempt 4 of 4): exit 137, OOMKilled; no restart left"},
		"maxRestarts 0":              {restartedPod("0", 1, oomKilled()), "driver failed (attempt 1 of 1): exit 137, OOMKilled; no restart left"},
	} {
		t.Run(name, func(t *testing.T) {
			a, ok := driverAttempt(tc.pod, podspec.DriverContainerName)
			if !ok {
				t.Fatal("no attempt")
			}
			if diff := cmp.Diff(tc.want, restartLine(a)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAttemptWatch: a line for each new attempt, none for the first or
// for other changes of the pod.
func TestAttemptWatch(t *testing.T) {
	seq := []*corev1.Pod{
		pod(corev1.PodPending, nil, "1"),
		restartedPod("3", 0, nil),
		restartedPod("3", 0, nil),
		restartedPod("3", 1, oomKilled()),
		restartedPod("3", 1, oomKilled()),
		with(restartedPod("3", 1, oomKilled()), func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		}),
		restartedPod("3", 3, &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "panic: boom"}),
		restartedPod("3", 4, oomKilled()),
		gaveUp(),
	}
	var got []string
	var w attemptWatch
	for _, p := range seq {
		if line, ok := w.observe(p, podspec.DriverContainerName); ok {
			got = append(got, line)
		}
	}
	want := []string{
		oomLine,
		"driver restarted (attempt 4 of 4): exit 1, Error: panic: boom",
		"driver failed (attempt 4 of 4): exit 137, OOMKilled; no restart left",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	// A watch that starts late reports the attempt it finds.
	w = attemptWatch{}
	if line, ok := w.observe(restartedPod("3", 1, oomKilled()), ""); !ok || line != oomLine {
		t.Errorf("first sight of a restarted driver: %q, %v; want %q", line, ok, oomLine)
	}
}

func TestOutcomeOutOfAttempts(t *testing.T) {
	failed := pod(corev1.PodFailed, ptr.To[int32](3), "1")
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want Outcome
	}{
		"gave up: the cause and the last attempt's exit": {
			gaveUp(),
			Outcome{Phase: corev1.PodFailed, ExitCode: 137, Reason: "OOMKilled", Message: failedCause},
		},
		"gave up after a restart with no cause reported": {
			with(gaveUp(), func(p *corev1.Pod) { p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{} }),
			Outcome{Phase: corev1.PodFailed, ExitCode: 143, Reason: "Error", Message: failedCause},
		},
		"failed without the annotation": {
			failed,
			Outcome{Phase: corev1.PodFailed, ExitCode: 3, Reason: "Error", Message: "panic: boom"},
		},
		"annotated but still running": {
			with(restartedPod("3", 4, oomKilled()), func(p *corev1.Pod) { p.Annotations[podspec.AnnotationFailed] = failedCause }),
			Outcome{Phase: corev1.PodRunning, ExitCode: 137, Reason: "OOMKilled"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, _ := outcomeOf(tc.pod, podspec.DriverContainerName, false)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatStatusAttempts(t *testing.T) {
	const head = "spark:wc-driver\tapp app-1\t"
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"first attempt": {restartedPod("3", 0, nil), head + "Running on node-1"},
		"restarted":     {restartedPod("3", 1, oomKilled()), head + "Running on node-1\tattempt 2 of 4, last restart: exit 137, OOMKilled"},
		"giving up": {
			with(restartedPod("3", 4, oomKilled()), func(p *corev1.Pod) { p.Annotations[podspec.AnnotationFailed] = failedCause }),
			head + "Running on node-1\tattempt 4 of 4 failed: exit 137, OOMKilled; no restart left\tfailing: " + failedCause,
		},
		"gave up": {
			gaveUp(),
			head + "Failed on node-1, container exited with code 143 (Error)\tattempt 4 of 4 failed: exit 137, OOMKilled; no restart left\n\t" + failedCause,
		},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, FormatStatus(tc.pod)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestWatcherShowsAttempts: submit prints a line per restart of the
// driver, keeps waiting, and ends with the cause the driver named when it
// gave up.
func TestWatcherShowsAttempts(t *testing.T) {
	cs := fake.NewClientset(restartedPod("3", 0, nil))
	out := &logtest.Buffer{}
	w := &Watcher{Client: cs, Namespace: "spark", Pod: "wc-driver", AppID: "app-1", Container: podspec.DriverContainerName,
		Interval: time.Hour, Clock: clocktesting.NewFakeClock(time.Now()), Out: out}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan Outcome, 1)
	go func() {
		o, err := w.Wait(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- o
	}()
	waitUntil(t, func() bool { return strings.Contains(out.String(), "Running on node-1") })
	for i, p := range []*corev1.Pod{restartedPod("3", 1, oomKilled()), restartedPod("3", 4, oomKilled()), gaveUp()} {
		p.ResourceVersion = ""
		if _, err := cs.CoreV1().Pods("spark").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			waitUntil(t, func() bool { return strings.Contains(out.String(), oomLine) })
		}
	}
	got := <-done
	if diff := cmp.Diff(Outcome{Phase: corev1.PodFailed, ExitCode: 137, Reason: "OOMKilled", Message: failedCause}, got); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	for _, want := range []string{
		"drover: spark/wc-driver: " + oomLine + "\n",
		"drover: spark/wc-driver: driver failed (attempt 4 of 4): exit 137, OOMKilled; no restart left\n",
		"drover: spark/wc-driver: Failed on node-1, container exited with code 143 (Error)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
