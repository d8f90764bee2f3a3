package procnode

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Container states and reasons as a kubelet reports them.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
	reasonConfigError       = "CreateContainerConfigError"
	reasonCrashLoop         = "CrashLoopBackOff"
	reasonStartError        = "StartError"
	reasonCompleted         = "Completed"
	reasonError             = "Error"
	reasonPodCompleted      = "PodCompleted"
)

// ctrState is the agent's view of one container.
type ctrState struct {
	spec     *corev1.Container
	id       string // containerID of the current or last run
	restarts int32
	state    corev1.ContainerState
	last     corev1.ContainerState
	ended    time.Time    // when the last run ended, at full precision
	backoff  backoffEntry // the kubelet's crash-loop back-off of this container
}

// finished is when the container's last run ended.
func (c *ctrState) finished() time.Time { return c.ended }

// setCrashLoop makes the ended container wait out its back-off; its
// termination becomes the last state, as the kubelet shows it.
func (c *ctrState) setCrashLoop(msg string) {
	if c.state.Terminated != nil {
		c.last = c.state
	}
	c.setWaiting(reasonCrashLoop, msg)
}

func (c *ctrState) setWaiting(reason, msg string) {
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

func (c *ctrState) setRunning(p *process) {
	if c.state.Terminated != nil {
		c.last = c.state
	}
	c.id = fmt.Sprintf("procnode://%d", p.pid)
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mtime(p.started)}}
}

func (c *ctrState) setExited(p *process) {
	reason := reasonCompleted
	if p.exit.code != 0 {
		reason = reasonError
	}
	t := &corev1.ContainerStateTerminated{
		ExitCode:    p.exit.code,
		Signal:      int32(p.exit.signal),
		Reason:      reason,
		StartedAt:   mtime(p.started),
		FinishedAt:  mtime(p.exit.finished),
		ContainerID: c.id,
	}
	c.state = corev1.ContainerState{Terminated: t}
	c.ended = p.exit.finished
}

// setStartError records a command that could not be started; runtimes
// report these as exit code 128 with reason StartError.
func (c *ctrState) setStartError(err error, now time.Time) {
	if c.state.Terminated != nil {
		c.last = c.state
	}
	c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 128, Reason: reasonStartError, Message: err.Error(),
		StartedAt: mtime(now), FinishedAt: mtime(now),
	}}
	c.ended = now
}

func (c *ctrState) terminatedOK() bool {
	return c.state.Terminated != nil && c.state.Terminated.ExitCode == 0
}

func (c *ctrState) status(init bool) corev1.ContainerStatus {
	running := c.state.Running != nil
	ready := running
	if init {
		ready = c.terminatedOK()
	}
	return corev1.ContainerStatus{
		Name:                 c.spec.Name,
		Image:                c.spec.Image,
		ImageID:              "",
		ContainerID:          c.id,
		RestartCount:         c.restarts,
		Ready:                ready,
		Started:              &running,
		State:                c.state,
		LastTerminationState: c.last,
	}
}

// podState is the agent's view of a pod; apply writes it into the API
// object's status.
type podState struct {
	podIP, hostIP string
	startTime     metav1.Time
	initCtrs      []*ctrState
	ctrs          []*ctrState
	initDone      bool
	phase         corev1.PodPhase
	reason, msg   string // pod-level, for failures that are no container's
}

func newPodState(pod *corev1.Pod, podIP, hostIP string, now time.Time) *podState {
	s := &podState{podIP: podIP, hostIP: hostIP, startTime: mtime(now), phase: corev1.PodPending}
	s.initDone = len(pod.Spec.InitContainers) == 0
	for i := range pod.Spec.InitContainers {
		c := &ctrState{spec: &pod.Spec.InitContainers[i]}
		c.setWaiting(reasonPodInitializing, "")
		s.initCtrs = append(s.initCtrs, c)
	}
	for i := range pod.Spec.Containers {
		c := &ctrState{spec: &pod.Spec.Containers[i]}
		reason := reasonContainerCreating
		if !s.initDone {
			reason = reasonPodInitializing
		}
		c.setWaiting(reason, "")
		s.ctrs = append(s.ctrs, c)
	}
	return s
}

// finalPhase is the phase of a pod none of whose containers will run again.
func (s *podState) finalPhase() corev1.PodPhase {
	if !s.initDone {
		return corev1.PodFailed
	}
	for _, c := range s.ctrs {
		if !c.terminatedOK() {
			return corev1.PodFailed
		}
	}
	return corev1.PodSucceeded
}

// apply writes s into st, keeping conditions the agent doesn't own (such as
// PodScheduled) and the transition times of conditions that didn't change.
func (s *podState) apply(st *corev1.PodStatus, generation int64, now time.Time) {
	st.Phase = s.phase
	st.Reason, st.Message = s.reason, s.msg
	st.HostIP = s.hostIP
	st.HostIPs = []corev1.HostIP{{IP: s.hostIP}}
	if s.podIP != "" {
		st.PodIP = s.podIP
		st.PodIPs = []corev1.PodIP{{IP: s.podIP}}
	}
	if st.StartTime == nil {
		t := s.startTime
		st.StartTime = &t
	}
	st.ObservedGeneration = generation
	st.InitContainerStatuses = nil
	for _, c := range s.initCtrs {
		st.InitContainerStatuses = append(st.InitContainerStatuses, c.status(true))
	}
	st.ContainerStatuses = nil
	for _, c := range s.ctrs {
		st.ContainerStatuses = append(st.ContainerStatuses, c.status(false))
	}

	terminal := s.phase == corev1.PodSucceeded || s.phase == corev1.PodFailed
	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: generation}
		if ok {
			c = corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, ObservedGeneration: generation}
		}
		setCondition(st, c, now)
	}
	cond(corev1.PodReadyToStartContainers, s.podIP != "" && !terminal, "", "")
	var pendingInit []string
	for _, c := range s.initCtrs {
		if !c.terminatedOK() {
			pendingInit = append(pendingInit, c.spec.Name)
		}
	}
	switch {
	case s.initDone:
		cond(corev1.PodInitialized, true, "", "")
	case terminal:
		cond(corev1.PodInitialized, false, reasonPodCompleted, "")
	default:
		cond(corev1.PodInitialized, false, "ContainersNotInitialized", "containers with incomplete status: ["+strings.Join(pendingInit, " ")+"]")
	}
	var unready []string
	for _, c := range s.ctrs {
		if c.state.Running == nil {
			unready = append(unready, c.spec.Name)
		}
	}
	reason, msg := "ContainersNotReady", "containers with unready status: ["+strings.Join(unready, " ")+"]"
	if terminal {
		reason, msg = reasonPodCompleted, ""
	}
	cond(corev1.ContainersReady, len(unready) == 0, reason, msg)
	cond(corev1.PodReady, len(unready) == 0, reason, msg)
}

func setCondition(st *corev1.PodStatus, c corev1.PodCondition, now time.Time) {
	i := slices.IndexFunc(st.Conditions, func(o corev1.PodCondition) bool { return o.Type == c.Type })
	if i < 0 {
		c.LastTransitionTime = mtime(now)
		st.Conditions = append(st.Conditions, c)
		return
	}
	c.LastProbeTime = st.Conditions[i].LastProbeTime
	c.LastTransitionTime = st.Conditions[i].LastTransitionTime
	if st.Conditions[i].Status != c.Status {
		c.LastTransitionTime = mtime(now)
	}
	st.Conditions[i] = c
}

// mtime is t at the precision the API stores, so that comparing a status
// with what was written doesn't see changes that aren't there.
func mtime(t time.Time) metav1.Time {
	return metav1.NewTime(t).Rfc3339Copy()
}
