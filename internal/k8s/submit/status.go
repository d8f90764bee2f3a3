package submit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/logging"
)

// drover status: one line per application, and what the API server tells
// about a driver that is no pod.

// AppStatus is one application's status line.
type AppStatus struct {
	// Name is App.Name.
	Name string
	Line string
	// Failed says the driver failed, or is gone without having ended
	// well (see DriverState).
	Failed bool
}

// Status describes the applications id names, one line each (now is the
// time the client-mode rule measures ages against):
//
//	namespace:driver-pod  app <id>  <state>  started <time>   (cluster mode)
//	namespace:app-id      client mode  <state>  left: <objects>
//
// A failed cluster-mode driver's line is followed by the end of its
// termination message.
func Status(ctx context.Context, cs kubernetes.Interface, id ID, now time.Time) ([]AppStatus, error) {
	apps, err := Find(ctx, cs, id)
	if err != nil {
		return nil, err
	}
	out := make([]AppStatus, len(apps))
	for i, a := range apps {
		out[i] = AppStatus{Name: a.Name()}
		if a.Driver != nil {
			out[i].Line = FormatStatus(a.Driver)
			res, done := outcomeOf(a.Driver, podspec.DriverContainerName, false)
			out[i].Failed = done && !res.Succeeded()
			continue
		}
		st := DriverState(&a, now)
		mode := "client mode"
		if !a.ClientMode() {
			mode = "cluster mode"
		}
		out[i].Line = fmt.Sprintf("%s\t%s\t%s\tleft: %s", a.Name(), mode, st.Text, leftOf(&a))
		out[i].Failed = st.Failed
	}
	return out, nil
}

// FormatStatus is a driver pod's status line.
func FormatStatus(p *corev1.Pod) string {
	s := fmt.Sprintf("%s:%s\tapp %s\t%s", p.Namespace, p.Name, p.Labels[snapshot.LabelAppID], Describe(p, podspec.DriverContainerName))
	if st := p.Status.StartTime; st != nil {
		s += "\tstarted " + st.UTC().Format(time.RFC3339)
	}
	out, done := outcomeOf(p, podspec.DriverContainerName, false)
	if a := attemptStatus(p, podspec.DriverContainerName, done); a != "" {
		s += "\t" + a
	}
	if done && out.Message != "" {
		s += "\n\t" + strings.ReplaceAll(logging.Tail(out.Message, 5), "\n", "\n\t")
	}
	return s
}

// DriverGoneAfter is how long an executor pod may stay ended, neither
// deleted nor labelled spark-exec-inactive, before DriverState takes its
// driver as gone. A live driver deletes (or labels) such a pod at its next
// event processing, every second by default, and retries a failed request
// after 30 s: a minute covers one retry on a slow API server.
const DriverGoneAfter = time.Minute

// State is what the API server tells about the driver of an application
// without a driver pod.
type State struct {
	// Text is "driver gone", "running: N executors[, M pending]",
	// "finished: …", "stopping: …", "starting: …" or "no executors: …".
	Text string
	// Gone says the driver is not running; Failed that it did not end
	// well: it is gone and its executors did not end with exit code 0.
	Gone, Failed bool
}

// DriverState judges whether the driver of an application without a
// driver pod (a client-mode driver, which is a process outside the
// cluster) is alive, from its objects alone: status makes no connection
// to the driver. A live driver looks after its executor pods: it deletes
// the pod of every executor that ended (or labels it spark-exec-inactive
// when spark.kubernetes.executor.deleteOnTermination is false) and
// replaces it; when it stops it deletes its pods and its config map. So
// the driver is gone when
//
//   - the cluster-mode driver pod that owned the objects is gone; or
//   - an executor pod ended DriverGoneAfter ago or more and is still
//     there, neither being deleted nor labelled inactive (executors end
//     by themselves once their driver is unreachable: at once when its
//     process dies, after spark.network.timeout when its machine does); or
//   - no executor pod is left, only the config map, created
//     DriverGoneAfter ago or more, and the application uses static
//     allocation (its config map does not enable dynamic allocation),
//     under which a live driver always has executors.
//
// A gone driver failed unless it shut its executors down itself: they end
// with exit code 0 then (and stay only with deleteOnTermination=false),
// while executors that lost their driver exit with 1.
//
// Otherwise it is "running" while executor pods are running or pending
// (a driver that died moments ago shows so until its executors end), and
// "no executors" when it may be idle under dynamic allocation.
func DriverState(a *App, now time.Time) State {
	var running, pending, terminating, recentlyEnded, stale, staleFailed int
	for i := range a.Executors {
		p := &a.Executors[i]
		ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		switch {
		case ended && p.DeletionTimestamp == nil && p.Labels[snapshot.LabelInactive] != "true":
			if now.Sub(endedAt(p)) >= DriverGoneAfter {
				stale++
				if p.Status.Phase == corev1.PodFailed {
					staleFailed++
				}
			} else {
				recentlyEnded++
			}
		case ended:
			// Deleted or labelled inactive: its driver (or kill) saw it.
		case p.DeletionTimestamp != nil:
			terminating++
		case p.Status.Phase == corev1.PodRunning:
			running++
		default:
			pending++
		}
	}
	live := running + pending
	switch {
	case !a.ClientMode():
		return State{Text: "driver gone: the driver pod was deleted; garbage collection removes what it owned", Gone: true, Failed: true}
	case stale > 0 && (staleFailed > 0 || live > 0):
		return State{Text: "driver gone", Gone: true, Failed: true}
	case stale > 0:
		return State{Text: "finished: the driver shut its executors down and kept their pods", Gone: true}
	case live > 0:
		s := "running: " + plural(running, "executor")
		if pending > 0 {
			s += fmt.Sprintf(", %d pending", pending)
		}
		return State{Text: s}
	case terminating > 0:
		return State{Text: "stopping: " + plural(terminating, "executor pod") + " being deleted"}
	case recentlyEnded > 0:
		return State{Text: fmt.Sprintf("no executors: %d ended in the last %s (driver gone if they stay)", recentlyEnded, config.FormatDuration(DriverGoneAfter))}
	}
	dynamic, newest := false, time.Time{}
	for _, cm := range a.ConfigMaps {
		v, _ := confValue(&cm, config.DynamicAllocationEnabled.Key())
		if on, err := config.DynamicAllocationEnabled.Parse(v); err == nil && on {
			dynamic = true
		}
		if t := cm.CreationTimestamp.Time; t.After(newest) {
			newest = t
		}
	}
	switch {
	case dynamic:
		return State{Text: "no executors: idle under dynamic allocation, or driver gone"}
	case now.Sub(newest) < DriverGoneAfter:
		return State{Text: "starting: no executor pods yet"}
	}
	return State{Text: "driver gone", Gone: true, Failed: true}
}

// endedAt is when an ended pod's last container finished; a kubelet
// always reports it, the pod's conditions and creation are fallbacks.
func endedAt(p *corev1.Pod) time.Time {
	var t time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if term := cs.State.Terminated; term != nil && term.FinishedAt.After(t) {
			t = term.FinishedAt.Time
		}
	}
	if t.IsZero() {
		for _, c := range p.Status.Conditions {
			if c.LastTransitionTime.After(t) {
				t = c.LastTransitionTime.Time
			}
		}
	}
	if t.IsZero() {
		t = p.CreationTimestamp.Time
	}
	return t
}

// confValue is key's value in a config map that podspec wrote as
// spark-defaults.conf: one key=value a line, and keys such as Spark's
// need no escapes.
func confValue(cm *corev1.ConfigMap, key string) (string, bool) {
	for line := range strings.SplitSeq(cm.Data[config.DefaultsFile], "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// leftOf lists an application's objects: executor pods by phase, then
// the config maps by name.
func leftOf(a *App) string {
	var parts []string
	if n := len(a.Executors); n > 0 {
		byPhase := map[string]int{}
		for _, p := range a.Executors {
			ph := strings.ToLower(string(p.Status.Phase))
			switch {
			case p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
				ph = "terminating"
			case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
				ph = "ended"
			case ph == "":
				ph = "pending"
			}
			byPhase[ph]++
		}
		var phases []string
		for _, ph := range slices.Sorted(maps.Keys(byPhase)) {
			phases = append(phases, fmt.Sprintf("%d %s", byPhase[ph], ph))
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", plural(n, "executor pod"), strings.Join(phases, ", ")))
	}
	for _, cm := range a.ConfigMaps {
		parts = append(parts, "configmap "+cm.Name)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
