package lifecycle

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// Reason names a problem that keeps an executor pod from starting or
// running. The values are the Kubernetes reasons users see in kubectl.
type Reason string

// Problems of pending pods (container waiting reasons and the scheduler's
// condition) and of pods whose node is lost.
const (
	// ReasonErrImagePull and ReasonImagePullBackOff: the kubelet cannot pull
	// the image. It alternates between the two while it retries, so they
	// share one grace period.
	ReasonErrImagePull     Reason = "ErrImagePull"
	ReasonImagePullBackOff Reason = "ImagePullBackOff"
	// ReasonInvalidImageName: the image reference cannot be parsed.
	ReasonInvalidImageName Reason = "InvalidImageName"
	// ReasonErrImageNeverPull: imagePullPolicy is Never and the node does
	// not have the image.
	ReasonErrImageNeverPull Reason = "ErrImageNeverPull"
	// ReasonCreateContainerConfigError: the container's configuration
	// refers to something missing, such as a Secret or ConfigMap key.
	ReasonCreateContainerConfigError Reason = "CreateContainerConfigError"
	// ReasonCreateContainerError: the runtime cannot create the container.
	ReasonCreateContainerError Reason = "CreateContainerError"
	// ReasonRunContainerError: the runtime cannot start the container's
	// command.
	ReasonRunContainerError Reason = "RunContainerError"
	// ReasonUnschedulable: the scheduler finds no node for the pod
	// (condition PodScheduled=False, reason Unschedulable).
	ReasonUnschedulable Reason = "Unschedulable"
	// ReasonNodeLost: the pod's node stopped reporting to the control
	// plane. Its grace period is how long drover waits before it removes
	// the executor.
	ReasonNodeLost Reason = "NodeLost"
)

// DefaultPendingGrace returns drover's grace periods: how long a problem must
// last before drover acts. For an unschedulable pod the act is a warning
// (the pod keeps waiting); for a lost node it is removing the executor; for
// the others it is deleting the pod and counting an executor failure (they
// are reported to the user at once).
func DefaultPendingGrace() map[Reason]time.Duration {
	return map[Reason]time.Duration{
		ReasonErrImagePull:               time.Minute,
		ReasonImagePullBackOff:           time.Minute,
		ReasonInvalidImageName:           10 * time.Second,
		ReasonErrImageNeverPull:          10 * time.Second,
		ReasonCreateContainerConfigError: 10 * time.Second,
		ReasonCreateContainerError:       30 * time.Second,
		ReasonRunContainerError:          30 * time.Second,
		ReasonUnschedulable:              10 * time.Second,
		ReasonNodeLost:                   30 * time.Second,
	}
}

var defaultGrace = DefaultPendingGrace()

// startReasons are the container waiting reasons that keep a pod from
// starting.
var startReasons = map[Reason]bool{
	ReasonErrImagePull:               true,
	ReasonImagePullBackOff:           true,
	ReasonInvalidImageName:           true,
	ReasonErrImageNeverPull:          true,
	ReasonCreateContainerConfigError: true,
	ReasonCreateContainerError:       true,
	ReasonRunContainerError:          true,
}

// class groups the reasons the kubelet alternates between, so a pod's
// problem keeps its first-seen time and is reported once.
func (r Reason) class() Reason {
	if r == ReasonImagePullBackOff {
		return ReasonErrImagePull
	}
	return r
}

// Kubernetes reasons drover reads that client-go has no constants for.
const (
	podReasonEvicted  = "Evicted"
	podReasonNodeLost = "NodeLost" // the node lifecycle controller's NodeUnreachablePodReason
	// DisruptionTarget reasons set by kube-controller-manager and the
	// eviction API.
	reasonEvictionByAPI = "EvictionByEvictionAPI"
	reasonTaintManager  = "DeletionByTaintManager"
	reasonPodGC         = "DeletionByPodGC"
	containerOOMKilled  = "OOMKilled"
	containerStartError = "StartError"         // containerd
	containerCannotRun  = "ContainerCannotRun" // dockershim, cri-dockerd
	nodeStatusUnknown   = "NodeStatusUnknown"
	// Kueue stops a pod of an evicted workload with this condition (its
	// reason "WorkloadEvictedDueTo" + the eviction's reason, such as
	// Preempted), then deletes it.
	conditionKueueTermination = corev1.PodConditionType("TerminationTarget")
	kueueEvictedPrefix        = "WorkloadEvictedDueTo"
	kueueReasonPreempted      = "Preempted"
	nodeNotReady              = "NodeNotReady"
)

// problem is what keeps a pod from starting or running.
type problem struct {
	reason  Reason
	message string
}

// cause is the problem as the user reads it: `pod NAME: REASON: MESSAGE`.
func (p problem) cause(pod string) string {
	return fmt.Sprintf("pod %s: %s", pod, p.detail())
}

func (p problem) detail() string { return join(string(p.reason), p.message) }

// pendingProblem reports why a pending pod is not starting, if the reason
// is one drover acts on: the scheduler's Unschedulable condition first, then
// init containers and containers in order.
func pendingProblem(p *snapshot.Pod) (problem, bool) {
	for _, c := range p.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return problem{reason: ReasonUnschedulable, message: strings.TrimSpace(c.Message)}, true
		}
	}
	for _, statuses := range [][]corev1.ContainerStatus{p.InitContainerStatuses, p.ContainerStatuses} {
		for _, cs := range statuses {
			if w := cs.State.Waiting; w != nil && startReasons[Reason(w.Reason)] {
				return problem{reason: Reason(w.Reason), message: strings.TrimSpace(w.Message)}, true
			}
		}
	}
	return problem{}, false
}

// nodeLost reports whether a scheduled pod's node stopped reporting: the
// node lifecycle controller set the pod's status reason NodeLost, or marked
// its Ready condition false or unknown itself (no reason, or a node reason,
// while the kubelet last said the containers were ready).
func nodeLost(p *snapshot.Pod) (problem, bool) {
	node := p.NodeName
	if node == "" {
		return problem{}, false
	}
	msg := fmt.Sprintf("node %s stopped reporting to the control plane", node)
	if p.Reason == podReasonNodeLost {
		if m := strings.TrimSpace(p.Message); m != "" {
			msg = m
		}
		return problem{reason: ReasonNodeLost, message: msg}, true
	}
	ready := condition(p, corev1.PodReady)
	if ready == nil || ready.Status == corev1.ConditionTrue {
		return problem{}, false
	}
	switch {
	case ready.Status == corev1.ConditionUnknown,
		ready.Reason == nodeStatusUnknown, ready.Reason == nodeNotReady, ready.Reason == podReasonNodeLost:
	case ready.Reason == "":
		// The kubelet always gives a reason when it marks a pod not
		// ready; the node lifecycle controller gives none and leaves
		// ContainersReady as the kubelet last reported it.
		if cr := condition(p, corev1.ContainersReady); cr == nil || cr.Status != corev1.ConditionTrue {
			return problem{}, false
		}
	default:
		return problem{}, false
	}
	return problem{reason: ReasonNodeLost, message: msg}, true
}

func condition(p *snapshot.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Conditions {
		if p.Conditions[i].Type == t {
			return &p.Conditions[i]
		}
	}
	return nil
}

// join joins the non-empty of reason and message with ": ".
func join(reason, message string) string {
	reason, message = strings.TrimSpace(reason), strings.TrimSpace(message)
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}
