package submit

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/k8s/podspec"
)

// Driver attempts. A driver pod with restartPolicy OnFailure runs its
// driver again in place after a crash; the container's restart count
// numbers the attempts (attempt restartCount+1), out of the max-restarts
// annotation + 1. When no restart is left the driver names the cause in
// podspec.AnnotationFailed and ends its pod (Failed, DeadlineExceeded).

// maxCauseMessage bounds the termination message line a cause quotes.
const maxCauseMessage = 120

// DriverAttempt is the driver's current attempt, as its pod shows it.
type DriverAttempt struct {
	// Number is the attempt, from 1: the driver container's restart
	// count + 1.
	Number int
	// Of is how many attempts the driver may make (max-restarts + 1); 0
	// when the pod does not say (no annotation).
	Of int
	// LastCause is why the previous attempt ended ("exit 137, OOMKilled");
	// "" for the first attempt.
	LastCause string
	// Exhausted says the last attempt (Number, which is then Of) failed
	// and the driver may not run again: the run after it only ends the
	// application.
	Exhausted bool
}

// String is "attempt 2 of 4", or "attempt 2" when Of is unknown.
func (a DriverAttempt) String() string {
	if a.Of > 0 {
		return fmt.Sprintf("attempt %d of %d", a.Number, a.Of)
	}
	return fmt.Sprintf("attempt %d", a.Number)
}

// driverAttempt is the attempt of the driver container (named container,
// or the first) of pod; ok is false when the pod has no status for it yet.
func driverAttempt(pod *corev1.Pod, container string) (a DriverAttempt, ok bool) {
	cs := containerStatus(pod, container)
	if cs == nil {
		return DriverAttempt{}, false
	}
	a = DriverAttempt{Number: int(cs.RestartCount) + 1, Of: maxAttempts(pod)}
	if cs.RestartCount > 0 {
		a.LastCause = terminationCause(cs.LastTerminationState.Terminated)
	}
	if a.Of > 0 && a.Number > a.Of {
		a.Number, a.Exhausted = a.Of, true
	}
	return a, true
}

func containerStatus(pod *corev1.Pod, container string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if cs := &pod.Status.ContainerStatuses[i]; cs.Name == container || container == "" {
			return cs
		}
	}
	return nil
}

// maxAttempts is podspec.AnnotationMaxRestarts + 1; 0 without it.
func maxAttempts(pod *corev1.Pod) int {
	n, err := strconv.Atoi(pod.Annotations[podspec.AnnotationMaxRestarts])
	if err != nil || n < 0 {
		return 0
	}
	return n + 1
}

// terminationCause says why a run ended: "exit 137, OOMKilled", followed
// by the last line of its termination message when that is short:
// "exit 2, Error: panic: no input".
func terminationCause(t *corev1.ContainerStateTerminated) string {
	if t == nil {
		return "cause not reported"
	}
	s := "exit " + strconv.Itoa(int(t.ExitCode))
	if t.Reason != "" {
		s += ", " + t.Reason
	}
	if l := lastLine(t.Message); l != "" && len(l) <= maxCauseMessage {
		s += ": " + l
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	return s
}

// restartLine is what submit prints when the driver restarted:
// "driver restarted (attempt 2 of 4): exit 137, OOMKilled", or once the
// last attempt failed "driver failed (attempt 4 of 4): exit 137,
// OOMKilled; no restart left".
func restartLine(a DriverAttempt) string {
	if a.Exhausted {
		return fmt.Sprintf("driver failed (%s): %s; no restart left", a, a.LastCause)
	}
	return fmt.Sprintf("driver restarted (%s): %s", a, a.LastCause)
}

// attemptWatch remembers the attempt a Watcher last reported.
type attemptWatch struct {
	seen      int // the attempt number last seen; 0 before the first
	exhausted bool
}

// observe returns the line to print when pod's driver container restarted
// since the last call: the driver runs a new attempt. The first sight of a
// pod whose driver already restarted reports its current attempt too.
func (w *attemptWatch) observe(pod *corev1.Pod, container string) (string, bool) {
	a, ok := driverAttempt(pod, container)
	if !ok || a.Number < w.seen || a.Number == w.seen && a.Exhausted == w.exhausted {
		return "", false
	}
	w.seen, w.exhausted = a.Number, a.Exhausted
	if a.Number == 1 && !a.Exhausted {
		return "", false
	}
	return restartLine(a), true
}

// failedFor is why the application failed for good when its driver ran
// out of restarts (podspec.AnnotationFailed), "" otherwise.
func failedFor(pod *corev1.Pod) string {
	return firstLine(pod.Annotations[podspec.AnnotationFailed])
}

// outOfAttempts turns the outcome of a driver pod that ended Failed after
// its driver gave up (failedFor) into the last real attempt's: the final
// run only named the cause and was stopped by the pod's deadline, so its
// own exit says nothing. The message is the driver's cause.
func outOfAttempts(out Outcome, pod *corev1.Pod, container string) Outcome {
	cause := failedFor(pod)
	if cause == "" || pod.Status.Phase != corev1.PodFailed || out.Deleted {
		return out
	}
	if cs := containerStatus(pod, container); cs != nil {
		if t := cs.LastTerminationState.Terminated; t != nil {
			out.ExitCode, out.Reason = int(t.ExitCode), t.Reason
		}
	}
	out.Message = cause
	return out
}

// attemptStatus is what drover status adds about attempts to a driver
// pod's line: "attempt 2 of 4, last restart: exit 137, OOMKilled" once the
// driver restarted, and the cause of a driver that gave up but whose pod
// has not ended yet; "" when there is nothing to add.
func attemptStatus(pod *corev1.Pod, container string, done bool) string {
	var parts []string
	if a, ok := driverAttempt(pod, container); ok && (a.Number > 1 || a.Exhausted) {
		if a.Exhausted {
			parts = append(parts, a.String()+" failed: "+a.LastCause+"; no restart left")
		} else {
			parts = append(parts, a.String()+", last restart: "+a.LastCause)
		}
	}
	if cause := failedFor(pod); cause != "" && !done {
		parts = append(parts, "failing: "+cause)
	}
	return strings.Join(parts, "\t")
}
