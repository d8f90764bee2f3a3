package procnode

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

const (
	defaultGrace = 30 * time.Second
	configRetry  = 2 * time.Second
	apiTimeout   = 15 * time.Second
)

// podWorker runs one pod from its first sight to its deletion. It is the only
// writer of the pod's status, so status updates never race each other.
type podWorker struct {
	a   *Agent
	uid types.UID
	log *slog.Logger
	dir string // the pod's directory: logs/, volumes/ and the working directory

	mu    sync.Mutex
	pod   *corev1.Pod         // newest object seen
	procs map[string]*process // containers' running processes
	// runs holds, per container, where each run's output starts in its log:
	// the kubelet API serves the current run, or the one before.
	runs map[string][]int64

	// updated receives when the agent saw a new version of the pod: its
	// active deadline may have changed.
	updated chan struct{}
	// dl is the pod's active deadline, counted from its start; only run's
	// goroutine uses it.
	dl *deadline

	stopOnce sync.Once
	stop     chan struct{} // closed when the pod is being deleted
	goneOnce sync.Once
	gone     chan struct{} // closed when the pod object is gone
	done     chan struct{} // closed when run returns
}

func newPodWorker(a *Agent, pod *corev1.Pod) *podWorker {
	return &podWorker{
		a:       a,
		uid:     pod.UID,
		log:     a.log.With("pod", pod.Namespace+"/"+pod.Name),
		dir:     filepath.Join(a.cfg.Dir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID)),
		pod:     pod,
		procs:   map[string]*process{},
		runs:    map[string][]int64{},
		updated: make(chan struct{}, 1),
		stop:    make(chan struct{}),
		gone:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

func (w *podWorker) latest() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

func (w *podWorker) setLatest(pod *corev1.Pod) {
	w.mu.Lock()
	w.pod = pod
	w.mu.Unlock()
}

// notify tells the worker that the agent saw a new version of the pod.
func (w *podWorker) notify() {
	select {
	case w.updated <- struct{}{}:
	default:
	}
}

func (w *podWorker) requestStop() { w.stopOnce.Do(func() { close(w.stop) }) }
func (w *podWorker) markGone()    { w.goneOnce.Do(func() { close(w.gone) }) }

// running reports whether container name may still write to its log.
func (w *podWorker) running(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.procs[name] != nil
}

// setProcess records container name's running process, nil once it ended.
func (w *podWorker) setProcess(name string, p *process) {
	w.mu.Lock()
	if p == nil {
		delete(w.procs, name)
	} else {
		w.procs[name] = p
	}
	w.mu.Unlock()
}

// process is container name's running process, nil if none runs.
func (w *podWorker) process(name string) *process {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.procs[name]
}

// addRun records that a run of container starts writing at offset of its log.
func (w *podWorker) addRun(container string, offset int64) {
	w.mu.Lock()
	w.runs[container] = append(w.runs[container], offset)
	w.mu.Unlock()
}

// runBounds is where the current run of container (or with previous, the
// run before it) is in its log: from from to to, or to the end if to < 0.
func (w *podWorker) runBounds(container string, previous bool) (from, to int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.runs[container]
	switch {
	case !previous && len(r) == 0:
		return 0, -1, true // not started: an empty log
	case !previous:
		return r[len(r)-1], -1, true
	case len(r) < 2:
		return 0, 0, false
	}
	return r[len(r)-2], r[len(r)-1], true
}

// runCount is how many runs of container have started.
func (w *podWorker) runCount(container string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.runs[container])
}

// runStart is where run i (from 0) of container starts in its log, or -1
// if it has not started.
func (w *podWorker) runStart(container string, i int) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.runs[container]; i >= 0 && i < len(r) {
		return r[i]
	}
	return -1
}

func (w *podWorker) logPath(container string) string {
	return filepath.Join(w.dir, "logs", container+".log")
}

// grace is how long deleted containers get between SIGTERM and SIGKILL.
func (w *podWorker) grace() time.Duration {
	pod := w.latest()
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return defaultGrace
}

// outcome says why a set of containers stopped running.
type outcome int

const (
	finished  outcome = iota // every container ended and none will restart
	stopped                  // the pod is being deleted
	abandoned                // the pod is gone or the agent is stopping: no status to write
	expired                  // the pod passed its active deadline: its containers were killed
)

func (w *podWorker) run(ctx context.Context) {
	defer close(w.done)
	pod := w.latest()
	// Host-network pods share the node's address; the others get their own.
	podIP, release := w.a.cfg.NodeIP, func() {}
	if !pod.Spec.HostNetwork {
		ip, err := w.a.ips.allocate()
		if err != nil {
			st := newPodState(pod, "", w.a.cfg.NodeIP, w.a.clock.Now())
			st.phase, st.reason, st.msg = corev1.PodFailed, "OutOfPodIPs", err.Error()
			w.post(ctx, st)
			w.finish(ctx)
			return
		}
		var once sync.Once
		podIP, release = ip.String(), func() { once.Do(func() { w.a.ips.release(ip) }) }
	}
	defer release()

	st := newPodState(pod, podIP, w.a.cfg.NodeIP, w.a.clock.Now())
	// The active deadline counts from status.startTime, as the API shows it.
	w.dl = newDeadline(w.a.clock, st.startTime.Time)
	defer w.dl.stop()
	w.dl.arm(w.latest())
	out := w.start(ctx, pod, st)
	if out == abandoned {
		return
	}
	release()
	st.phase = st.finalPhase()
	if out == expired {
		// The kubelet fails a pod past its deadline, whatever its
		// containers' exit codes.
		st.phase, st.reason, st.msg = corev1.PodFailed, reasonDeadlineExceeded, messageDeadlineExceeded
		w.log.Info("pod passed its active deadline", "activeDeadlineSeconds", ptr.Deref(w.latest().Spec.ActiveDeadlineSeconds, 0))
	}
	w.post(ctx, st)
	w.log.Debug("pod ended", "phase", st.phase)
	if out != stopped {
		w.finish(ctx)
		return
	}
	w.deleteObject(ctx)
}

// finish waits for the ended pod to be deleted and then removes it.
func (w *podWorker) finish(ctx context.Context) {
	select {
	case <-w.stop:
		w.deleteObject(ctx)
	case <-w.gone:
	case <-ctx.Done():
	}
}

// post writes the pod's status. Only this worker writes it, so a conflict
// only means the object changed elsewhere (labels, deletion): reread and
// write again.
func (w *podWorker) post(ctx context.Context, st *podState) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	pods := w.a.cfg.Client.CoreV1().Pods(w.latest().Namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := w.latest()
		upd := cur.DeepCopy()
		st.apply(&upd.Status, cur.Generation, time.Now())
		if equality.Semantic.DeepEqual(cur.Status, upd.Status) {
			return nil
		}
		res, err := pods.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := pods.Get(ctx, cur.Name, metav1.GetOptions{}); gerr == nil && fresh.UID == w.uid {
				w.setLatest(fresh)
			}
			return err
		}
		if err == nil {
			w.setLatest(res)
		}
		return err
	})
	switch {
	case err == nil:
	case apierrors.IsNotFound(err), ctx.Err() != nil && errors.Is(err, ctx.Err()):
	default:
		w.log.Warn("updating pod status failed", "err", err)
	}
}

// deleteObject removes the pod object now that its containers have
// stopped, as a kubelet does: grace period 0, only this very pod (UID).
func (w *podWorker) deleteObject(ctx context.Context) {
	pod := w.latest()
	for attempt := 0; ; attempt++ {
		dctx, cancel := context.WithTimeout(ctx, apiTimeout)
		err := w.a.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(dctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &w.uid},
		})
		cancel()
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return
		}
		w.log.Warn("deleting pod failed", "err", err, "attempt", attempt)
		select {
		case <-time.After(time.Second):
		case <-w.gone:
			return
		case <-ctx.Done():
			return
		}
	}
}
