package procnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/envvar"
)

const (
	defaultGrace      = 30 * time.Second
	configRetry       = 2 * time.Second
	restartBackoff    = time.Second
	maxRestartBackoff = 20 * time.Second
	apiTimeout        = 15 * time.Second
)

// podWorker runs one pod from its first sight to its deletion. It is the only
// writer of the pod's status, so status updates never race each other.
type podWorker struct {
	a   *Agent
	uid types.UID
	log *slog.Logger
	dir string // the pod's directory: logs/, volumes/ and the working directory

	mu     sync.Mutex
	pod    *corev1.Pod     // newest object seen
	active map[string]bool // containers whose process is running

	stopOnce sync.Once
	stop     chan struct{} // closed when the pod is being deleted
	goneOnce sync.Once
	gone     chan struct{} // closed when the pod object is gone
	done     chan struct{} // closed when run returns
}

func newPodWorker(a *Agent, pod *corev1.Pod) *podWorker {
	return &podWorker{
		a:      a,
		uid:    pod.UID,
		log:    a.log.With("pod", pod.Namespace+"/"+pod.Name),
		dir:    filepath.Join(a.cfg.Dir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID)),
		pod:    pod,
		active: map[string]bool{},
		stop:   make(chan struct{}),
		gone:   make(chan struct{}),
		done:   make(chan struct{}),
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

func (w *podWorker) requestStop() { w.stopOnce.Do(func() { close(w.stop) }) }
func (w *podWorker) markGone()    { w.goneOnce.Do(func() { close(w.gone) }) }

// running reports whether container name may still write to its log.
func (w *podWorker) running(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active[name]
}

func (w *podWorker) setActive(name string, on bool) {
	w.mu.Lock()
	w.active[name] = on
	w.mu.Unlock()
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
)

func (w *podWorker) run(ctx context.Context) {
	defer close(w.done)
	pod := w.latest()
	// Host-network pods share the node's address; the others get their own.
	podIP, release := w.a.cfg.NodeIP, func() {}
	if !pod.Spec.HostNetwork {
		ip, err := w.a.ips.allocate()
		if err != nil {
			st := newPodState(pod, "", w.a.cfg.NodeIP, time.Now())
			st.phase, st.reason, st.msg = corev1.PodFailed, "OutOfPodIPs", err.Error()
			w.post(ctx, st)
			w.finish(ctx)
			return
		}
		var once sync.Once
		podIP, release = ip.String(), func() { once.Do(func() { w.a.ips.release(ip) }) }
	}
	defer release()

	st := newPodState(pod, podIP, w.a.cfg.NodeIP, time.Now())
	out := w.start(ctx, pod, st)
	if out == abandoned {
		return
	}
	release()
	st.phase = st.finalPhase()
	w.post(ctx, st)
	w.log.Debug("pod ended", "phase", st.phase)
	if out != stopped {
		w.finish(ctx)
		return
	}
	w.deleteObject(ctx)
}

// start prepares the pod and runs its init containers, then its containers.
func (w *podWorker) start(ctx context.Context, pod *corev1.Pod, st *podState) outcome {
	for _, d := range []string{filepath.Join(w.dir, "logs"), filepath.Join(w.dir, "volumes")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			st.phase, st.reason, st.msg = corev1.PodFailed, "NodeError", err.Error()
			return finished
		}
	}
	w.post(ctx, st)
	// A kubelet pulls the images before it creates the containers.
	if out := w.pullImages(ctx, st); out != finished {
		return out
	}
	var envs map[string][]string
	for {
		var err error
		envs, err = w.prepare(ctx, pod, st)
		if err == nil {
			break
		}
		w.log.Info("pod configuration not ready", "err", err)
		for _, c := range slices.Concat(st.initCtrs, st.ctrs) {
			c.setWaiting(reasonConfigError, err.Error())
		}
		w.post(ctx, st)
		select {
		case <-time.After(configRetry):
		case <-w.stop:
			return stopped
		case <-w.gone:
			return abandoned
		case <-ctx.Done():
			return abandoned
		}
	}
	for _, c := range st.initCtrs {
		out := w.runContainers(ctx, pod, st, []*ctrState{c}, envs)
		if out != finished {
			return out
		}
		if !c.terminatedOK() {
			return finished
		}
	}
	st.initDone = true
	return w.runContainers(ctx, pod, st, st.ctrs, envs)
}

// prepare materialises the pod's volumes and resolves every container's
// environment; a failure is a configuration error to retry.
func (w *podWorker) prepare(ctx context.Context, pod *corev1.Pod, st *podState) (map[string][]string, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	refs := newPodRefs(w.a.cfg.Client, pod.Namespace)
	info := &podInfo{pod: pod, podIP: st.podIP, hostIP: st.hostIP, allocatable: w.a.cfg.Capacity}
	vols, skipped, err := prepareVolumes(ctx, refs, info, filepath.Join(w.dir, "volumes"))
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		w.log.Info("ignoring volumes of types a process node cannot provide", "volumes", skipped)
	}
	base := w.a.baseEnv(pod, w.dir)
	envs := map[string][]string{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			env, err := containerEnv(ctx, refs, info, c, base)
			if err != nil {
				return nil, err
			}
			for _, m := range c.VolumeMounts {
				if p, ok := vols[m.Name]; ok {
					env.set(VolumeEnvName(m.Name), filepath.Join(p, m.SubPath))
					if m.MountPath == serviceAccountMountPath {
						env.set(envvar.ServiceAccountDir, filepath.Join(p, m.SubPath))
					}
				}
			}
			envs[c.Name] = env.environ()
		}
	}
	return envs, nil
}

// launch starts container c, recording a start error in its state.
func (w *podWorker) launch(pod *corev1.Pod, c *ctrState, env []string) *process {
	lookup := func(name string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, _ := cutEnv(env[i]); k == name {
				return v, true
			}
		}
		return "", false
	}
	var argv []string
	for _, a := range append(append([]string{}, c.spec.Command...), c.spec.Args...) {
		argv = append(argv, expand(a, lookup))
	}
	fail := func(err error) *process {
		w.log.Info("container failed to start", "container", c.spec.Name, "err", err)
		c.setStartError(err, time.Now())
		return nil
	}
	if len(argv) == 0 {
		return fail(fmt.Errorf("container %q has no command: a process node runs the command on this machine and ignores the image", c.spec.Name))
	}
	pathEnv, _ := lookup("PATH")
	path, err := lookPath(argv[0], pathEnv)
	if err != nil {
		return fail(err)
	}
	dir := w.dir
	if c.spec.WorkingDir != "" {
		dir = c.spec.WorkingDir
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fail(fmt.Errorf("working directory %q does not exist on this machine", dir))
		}
	}
	f, err := os.OpenFile(w.logPath(c.spec.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	p, err := startProcess(path, argv, env, dir, f)
	if err != nil {
		return fail(err)
	}
	w.log.Debug("container started", "container", c.spec.Name, "pid", p.pid, "argv", argv)
	c.setRunning(p)
	return p
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

func restarts(policy corev1.RestartPolicy, code int32) bool {
	switch policy {
	case corev1.RestartPolicyAlways:
		return true
	case corev1.RestartPolicyOnFailure:
		return code != 0
	}
	return false
}

// runContainers runs ctrs until every one has ended for good, restarting
// them as the pod's restart policy says; a deletion signals them and ends the
// wait once they have exited.
func (w *podWorker) runContainers(ctx context.Context, pod *corev1.Pod, st *podState, ctrs []*ctrState, envs map[string][]string) outcome {
	policy := pod.Spec.RestartPolicy
	if policy == corev1.RestartPolicyAlways && len(st.initCtrs) > 0 && !st.initDone {
		policy = corev1.RestartPolicyOnFailure // init containers never restart after success
	}
	procs := make([]*process, len(ctrs))
	exits := make(chan int, len(ctrs))
	restartCh := make(chan int, len(ctrs))
	pending := 0 // restarts waiting for their back-off
	start := func(i int) {
		p := w.launch(pod, ctrs[i], envs[ctrs[i].spec.Name])
		if p == nil {
			if restarts(policy, 128) {
				ctrs[i].setWaiting(reasonCrashLoop, ctrs[i].state.Terminated.Message)
				w.scheduleRestart(ctrs[i], i, restartCh)
				pending++
			}
			return
		}
		procs[i] = p
		w.setActive(ctrs[i].spec.Name, true)
		go func() {
			<-p.done
			exits <- i
		}()
	}
	for i := range ctrs {
		start(i)
	}
	if st.initDone {
		st.phase = corev1.PodRunning
	}
	w.post(ctx, st)

	stop := w.stop
	var kill <-chan time.Time
	deleting := false
	killAll := func() {
		for _, p := range procs {
			if p != nil {
				p.signal(syscall.SIGKILL)
			}
		}
	}
	for {
		live := 0
		for _, p := range procs {
			if p != nil {
				live++
			}
		}
		if live == 0 && (pending == 0 || deleting) {
			if deleting {
				return stopped
			}
			return finished
		}
		select {
		case i := <-exits:
			p := procs[i]
			procs[i] = nil
			ctrs[i].setExited(p)
			w.setActive(ctrs[i].spec.Name, false)
			w.log.Debug("container exited", "container", ctrs[i].spec.Name, "code", p.exit.code)
			if !deleting && restarts(policy, p.exit.code) {
				w.scheduleRestart(ctrs[i], i, restartCh)
				pending++
			}
			if live > 1 || pending > 0 {
				w.post(ctx, st)
			}
		case i := <-restartCh:
			pending--
			if deleting {
				continue
			}
			ctrs[i].restarts++
			start(i)
			w.post(ctx, st)
		case <-stop:
			stop, deleting = nil, true
			grace := w.grace()
			w.log.Debug("stopping pod", "grace", grace)
			for _, p := range procs {
				if p != nil {
					p.signal(syscall.SIGTERM)
				}
			}
			kill = time.After(grace)
		case <-kill:
			killAll()
		case <-w.gone:
			killAll()
			waitAll(procs)
			return abandoned
		case <-ctx.Done():
			killAll()
			waitAll(procs)
			return abandoned
		}
	}
}

func waitAll(procs []*process) {
	for _, p := range procs {
		if p != nil {
			<-p.done
		}
	}
}

// scheduleRestart restarts container i of the set after a back-off that
// doubles with every restart, like a kubelet's crash-loop back-off but
// shorter, so tests don't wait minutes.
func (w *podWorker) scheduleRestart(c *ctrState, i int, ch chan<- int) {
	d := restartBackoff << min(c.restarts, 8)
	d = min(d, maxRestartBackoff)
	if c.state.Terminated != nil {
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d, c.spec.Name, w.latest().Name)
		c.last = c.state
		c.setWaiting(reasonCrashLoop, msg)
	}
	time.AfterFunc(d, func() { ch <- i })
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
