package procnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/envvar"
)

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
		if out := w.sleep(ctx, configRetry); out != finished {
			return out
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
		c.setStartError(err, w.a.clock.Now())
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
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	p, err := startProcess(w.a.clock, path, argv, env, dir, f)
	if err != nil {
		return fail(err)
	}
	w.log.Debug("container started", "container", c.spec.Name, "pid", p.pid, "argv", argv)
	w.addRun(c.spec.Name, fi.Size())
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
// them as the pod's restart policy says after the kubelet's crash-loop
// back-off; a deletion, or the pod's active deadline passing, signals them
// (SIGTERM, then SIGKILL after the grace period), restarts none, and ends
// the wait once they have exited.
func (w *podWorker) runContainers(ctx context.Context, pod *corev1.Pod, st *podState, ctrs []*ctrState, envs map[string][]string) outcome {
	if w.dl.passed() {
		return expired // start nothing
	}
	policy := pod.Spec.RestartPolicy
	if policy == corev1.RestartPolicyAlways && len(st.initCtrs) > 0 && !st.initDone {
		policy = corev1.RestartPolicyOnFailure // init containers never restart after success
	}
	clk := w.a.clock
	procs := make([]*process, len(ctrs))
	exits := make(chan int, len(ctrs))
	// One buffered slot per container in each: at most one of its sends is
	// outstanding, and a timer that fires after this function returned must
	// not block.
	retry := make(chan int, len(ctrs))
	startErrs := make(chan int, len(ctrs))
	waiting := make([]bool, len(ctrs)) // to be started again: backing off or failed to start
	timers := make([]clock.Timer, len(ctrs))
	defer func() {
		for _, t := range timers {
			if t != nil {
				t.Stop() // a deleted pod's back-off of up to 5 minutes
			}
		}
	}()
	// stopping: no container starts again, because the pod is being
	// deleted (deleting) or passed its active deadline (pastDeadline).
	var deleting, stopping, pastDeadline bool

	start := func(i int) {
		p := w.launch(pod, ctrs[i], envs[ctrs[i].spec.Name])
		if p == nil {
			// A start error is an exit with code 128, handled by the loop
			// like any other, not here: no recursion however short the
			// back-off.
			waiting[i] = true
			startErrs <- i
			return
		}
		procs[i] = p
		w.setProcess(ctrs[i].spec.Name, p)
		go func() {
			<-p.done
			exits <- i
		}()
	}
	// restart starts container i again unless it is still backing off since
	// its last exit, in which case it waits CrashLoopBackOff and is asked
	// again when the back-off ends.
	restart := func(i int) {
		c := ctrs[i]
		wait, next := w.a.backoff.decide(c.backoff, c.finished(), clk.Now())
		if wait > 0 {
			c.setCrashLoop(crashLoopMessage(c.backoff.backoff, c.spec.Name, pod.Name, pod.Namespace, string(pod.UID)))
			waiting[i] = true
			timers[i] = clk.AfterFunc(wait, func() { retry <- i })
			return
		}
		c.backoff = next
		c.restarts++
		start(i)
	}
	ended := func(i int) {
		term := ctrs[i].state.Terminated
		if !stopping && term != nil && restarts(policy, term.ExitCode) {
			restart(i)
		}
	}
	for i := range ctrs {
		start(i)
	}
	if st.initDone {
		st.phase = corev1.PodRunning // and it stays Running while containers restart
	}
	w.post(ctx, st)

	stop, deadline := w.stop, w.dl.C
	var (
		kill   <-chan time.Time
		killAt time.Time
	)
	killAll := func() {
		for _, p := range procs {
			if p != nil {
				p.signal(syscall.SIGKILL)
			}
		}
	}
	// terminate asks every container to stop, as a kubelet kills a pod:
	// SIGTERM, and SIGKILL once the grace period is over (the earlier end
	// of the two when a deletion follows the deadline).
	terminate := func() {
		stopping = true
		grace := w.grace()
		w.log.Debug("stopping pod", "grace", grace, "deleting", deleting, "pastDeadline", pastDeadline)
		for _, p := range procs {
			if p != nil {
				p.signal(syscall.SIGTERM)
			}
		}
		if at := clk.Now().Add(grace); kill == nil || at.Before(killAt) {
			kill, killAt = clk.After(grace), at
		}
	}
	for {
		live := 0
		for i, p := range procs {
			if p != nil || waiting[i] && !stopping {
				live++
			}
		}
		if live == 0 {
			switch {
			case deleting:
				return stopped
			case pastDeadline:
				return expired
			}
			return finished
		}
		select {
		case i := <-exits:
			p := procs[i]
			procs[i] = nil
			ctrs[i].setExited(p)
			w.setProcess(ctrs[i].spec.Name, nil)
			w.log.Debug("container exited", "container", ctrs[i].spec.Name, "code", p.exit.code)
			ended(i)
			if procs[i] != nil || waiting[i] || live > 1 {
				w.post(ctx, st)
			}
		case i := <-startErrs:
			waiting[i] = false
			ended(i)
			if procs[i] != nil || waiting[i] || live > 1 {
				w.post(ctx, st)
			}
		case i := <-retry:
			waiting[i] = false
			if stopping {
				continue
			}
			restart(i)
			w.post(ctx, st)
		case <-w.updated:
			w.dl.arm(w.latest())
		case <-deadline:
			if !w.dl.passed() {
				continue // a deadline since moved
			}
			deadline, pastDeadline = nil, true
			if !stopping {
				terminate()
			}
		case <-stop:
			stop, deleting = nil, true
			terminate()
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
