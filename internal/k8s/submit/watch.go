package submit

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// Outcome is how a driver pod ended.
type Outcome struct {
	// Phase is the pod's last phase; Deleted says the pod was deleted
	// before it ended.
	Phase   corev1.PodPhase
	Deleted bool
	// ExitCode, Reason and Message are the driver container's termination
	// (Message is the termination message, or the end of its log).
	ExitCode        int
	Reason, Message string
}

// Succeeded reports whether the driver ended well.
func (o Outcome) Succeeded() bool {
	return o.Phase == corev1.PodSucceeded && o.ExitCode == 0 && !o.Deleted
}

// Watcher follows a driver pod and its executors until the driver ends.
type Watcher struct {
	Client         kubernetes.Interface
	Namespace, Pod string
	AppID          string
	// Container is the driver container's name.
	Container string
	// Interval is spark.kubernetes.report.interval.
	Interval time.Duration
	Clock    clock.WithTicker
	Out      io.Writer

	mu      sync.Mutex
	pod     *corev1.Pod
	deleted bool
	watchMu sync.Mutex
	fatal   error
}

// Wait prints the driver's state changes and a status line every
// Interval, and returns once the driver pod succeeded, failed or was
// deleted. One informer watches the application's pods (driver and
// executors, by the spark-app-selector label); after a watch expires
// (410 Gone) it lists again, so an end that happened meanwhile is still
// seen.
func (w *Watcher) Wait(ctx context.Context) (Outcome, error) {
	if w.Clock == nil {
		w.Clock = clock.RealClock{}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(w.Client, 0, informers.WithNamespace(w.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{snapshot.LabelAppID: w.AppID}.String()
		}))
	inf := factory.Core().V1().Pods()
	lister := inf.Lister()
	informer := inf.Informer()
	// Errors the informer cannot get past (no right to list or watch)
	// end the wait; others (a watch that expired, a lost connection) it
	// retries by itself.
	_ = informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			w.watchMu.Lock()
			w.fatal = fmt.Errorf("watching driver pod %s/%s: %w", w.Namespace, w.Pod, err)
			w.watchMu.Unlock()
			poke()
		}
	})
	set := func(obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		if pod.Name == w.Pod {
			w.mu.Lock()
			w.pod, w.deleted = pod, deleted
			w.mu.Unlock()
		}
		poke()
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj, false) },
		UpdateFunc: func(_, obj any) { set(obj, false) },
		DeleteFunc: func(obj any) { set(obj, true) },
	}); err != nil {
		return Outcome{}, fmt.Errorf("watching driver pod %s/%s: %w", w.Namespace, w.Pod, err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()

	ticker := w.Clock.NewTicker(w.Interval)
	defer ticker.Stop()
	last, lastHeld := "", ""
	var since time.Time
	var attempts attemptWatch
	for {
		select {
		case <-ctx.Done():
			return Outcome{}, fmt.Errorf("waiting for driver pod %s/%s: %w", w.Namespace, w.Pod, context.Cause(ctx))
		case <-changed:
			w.watchMu.Lock()
			fatal := w.fatal
			w.watchMu.Unlock()
			if fatal != nil {
				return Outcome{}, fatal
			}
		case <-ticker.C():
			w.mu.Lock()
			pod := w.pod
			w.mu.Unlock()
			if last != "" {
				fmt.Fprintf(w.Out, "drover: %s/%s: status: %s for %s%s\n", w.Namespace, w.Pod, last,
					w.Clock.Since(since).Round(time.Second), executorsLine(lister, pod, false))
			}
			continue
		}
		w.mu.Lock()
		pod, deleted := w.pod, w.deleted
		w.mu.Unlock()
		if pod == nil {
			continue
		}
		state := Describe(pod, w.Container)
		if deleted {
			state = "deleted (was " + state + ")"
		}
		out, done := outcomeOf(pod, w.Container, deleted)
		// A driver that restarted in its pod runs its next attempt.
		if line, ok := attempts.observe(pod, w.Container); ok {
			fmt.Fprintf(w.Out, "drover: %s/%s: %s\n", w.Namespace, w.Pod, line)
		}
		// A new cap on the executors (or its end) is news too.
		held := heldBack(pod, done)
		if state != last || held != lastHeld {
			if state != last {
				last, since = state, w.Clock.Now()
			}
			lastHeld = held
			fmt.Fprintf(w.Out, "drover: %s/%s: %s%s\n", w.Namespace, w.Pod, state, executorsLine(lister, pod, done))
		}
		if done {
			if !out.Succeeded() && out.Message == "" && !deleted {
				out.Message = w.logTail(context.WithoutCancel(ctx))
			}
			return out, nil
		}
	}
}

// podLister lists the application's pods from the informer's cache.
type podLister interface {
	List(labels.Selector) ([]*corev1.Pod, error)
}

// executorsLine is the executor part of a line about driver pod driver
// (nil before it is seen): "; executors: 2 running, 0 pending[, 1 ended]"
// and, while a cap holds executors back, what the driver says holds them
// ("4 held back by ResourceQuota pods3", its annotation
// podspec.AnnotationExecutorsHeld). Once the driver ended (final), its
// executors work for nobody: pods not yet ended are "stopping" (the driver
// deleted them, or they exit as their driver is gone; garbage collection
// removes those of a deleted driver pod), and nothing else is said.
func executorsLine(lister podLister, driver *corev1.Pod, final bool) string {
	pods, err := lister.List(labels.SelectorFromSet(labels.Set{snapshot.LabelRole: snapshot.RoleExecutor}))
	if err != nil {
		pods = nil
	}
	var running, pending, ended int
	for _, p := range pods {
		switch p.Status.Phase {
		case corev1.PodRunning:
			running++
		case corev1.PodPending, "":
			pending++
		default:
			ended++
		}
	}
	if final {
		if live := running + pending; live > 0 {
			return fmt.Sprintf("; executors: %d stopping", live)
		}
		return ""
	}
	held := heldBack(driver, false)
	if len(pods) == 0 && held == "" {
		return ""
	}
	s := fmt.Sprintf("; executors: %d running, %d pending", running, pending)
	if ended > 0 {
		s += fmt.Sprintf(", %d ended", ended)
	}
	if held != "" {
		s += ", " + held
	}
	return s
}

// heldBack is what holds the executors of a running driver back, from its
// pod's annotation; "" when nothing does, and once the driver ended or its
// pod is being deleted (it asks for no executor any more, and the
// annotation may outlive the cap).
func heldBack(driver *corev1.Pod, final bool) string {
	if driver == nil || final || driver.DeletionTimestamp != nil {
		return ""
	}
	return firstLine(driver.Annotations[podspec.AnnotationExecutorsHeld])
}

// logTail is the end of the driver container's log, for a failure
// without termination message.
func (w *Watcher) logTail(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err := w.Client.CoreV1().Pods(w.Namespace).GetLogs(w.Pod, &corev1.PodLogOptions{
		Container: w.Container, TailLines: ptr.To[int64](20),
	}).DoRaw(ctx)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// outcomeOf says whether pod ended and how. A driver that failed while
// its pod was being deleted failed because of the deletion (SIGTERM, or
// SIGKILL after the grace period: the kubelet reports its exit before it
// removes the object), and that is the cause to name, not its exit code.
func outcomeOf(pod *corev1.Pod, container string, deleted bool) (Outcome, bool) {
	if pod.DeletionTimestamp != nil && pod.Status.Phase == corev1.PodFailed {
		deleted = true
	}
	out := Outcome{Phase: pod.Status.Phase, Deleted: deleted, ExitCode: -1}
	if t := terminated(pod, container); t != nil {
		out.ExitCode, out.Reason, out.Message = int(t.ExitCode), t.Reason, strings.TrimSpace(t.Message)
	}
	switch {
	case deleted:
		if out.Reason == "" {
			out.Reason = "the driver pod was deleted"
		}
		return out, true
	case pod.Status.Phase == corev1.PodSucceeded:
		if out.ExitCode < 0 {
			out.ExitCode = 0
		}
		return out, true
	case pod.Status.Phase == corev1.PodFailed:
		if out.Reason == "" {
			out.Reason, out.Message = pod.Status.Reason, pod.Status.Message
		}
		return outOfAttempts(out, pod, container), true
	}
	return out, false
}

func terminated(pod *corev1.Pod, container string) *corev1.ContainerStateTerminated {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container || container == "" {
			if cs.State.Terminated != nil {
				return cs.State.Terminated
			}
			return cs.LastTerminationState.Terminated
		}
	}
	return nil
}

// Describe is a driver pod's state in a few words: phase, node, and the
// container's state and reason.
func Describe(pod *corev1.Pod, container string) string {
	var b strings.Builder
	phase := string(pod.Status.Phase)
	if phase == "" {
		phase = "Pending"
	}
	b.WriteString(phase)
	if pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		b.WriteString(" (terminating)")
	}
	if n := pod.Spec.NodeName; n != "" {
		b.WriteString(" on " + n)
	} else if g := snapshot.Gate(pod); g != "" {
		// A queue (Kueue) holds the pod until it admits it.
		if strings.HasPrefix(g, "queue ") {
			b.WriteString(", waiting for queue admission (" + g + ")")
		} else {
			b.WriteString(", held by " + g)
		}
	} else if pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "" {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
				b.WriteString(", not scheduled: " + c.Reason)
				if c.Message != "" {
					b.WriteString(" (" + c.Message + ")")
				}
			}
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != container && container != "" {
			continue
		}
		switch st := cs.State; {
		case st.Waiting != nil:
			b.WriteString(", container waiting: " + st.Waiting.Reason)
			if st.Waiting.Message != "" {
				b.WriteString(" (" + firstLine(st.Waiting.Message) + ")")
			}
		case st.Terminated != nil:
			fmt.Fprintf(&b, ", container exited with code %d", st.Terminated.ExitCode)
			if st.Terminated.Reason != "" {
				b.WriteString(" (" + st.Terminated.Reason + ")")
			}
		}
	}
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
