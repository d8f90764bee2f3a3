package procnode

import (
	"fmt"
	"syscall"
)

// Signal sends sig to the running container of the newest pod
// namespace/name on this agent's nodes (container "" is the pod's first),
// for tests that crash or freeze a container as its runtime would: sig
// reaches every process of the container, as a runtime's kill reaches the
// container's whole cgroup. SIGKILL ends the run with exit code 137, after
// which the pod's restart policy decides, as for any exit; SIGSTOP freezes
// the container (it keeps running as far as the API shows) and SIGCONT
// thaws it. It fails when the container is not running now (not started,
// ended, or backing off before a restart).
func (a *Agent) Signal(namespace, pod, container string, sig syscall.Signal) error {
	w := a.worker(namespace, pod)
	if w == nil {
		return fmt.Errorf("no pod %s/%s has run on process nodes %v", namespace, pod, a.cfg.NodeNames)
	}
	if container == "" {
		container = w.latest().Spec.Containers[0].Name
	}
	p := w.process(container)
	if p == nil {
		return fmt.Errorf("container %s of pod %s/%s is not running", container, namespace, pod)
	}
	select {
	case <-p.done:
		return fmt.Errorf("container %s of pod %s/%s is not running: it just exited", container, namespace, pod)
	default:
	}
	if err := syscall.Kill(-p.pid, sig); err != nil {
		return fmt.Errorf("signalling container %s of pod %s/%s (process group %d): %w", container, namespace, pod, p.pid, err)
	}
	return nil
}
