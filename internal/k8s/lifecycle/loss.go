package lifecycle

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/scheduler"
)

// registration says whether an executor had registered with the driver
// when its pod ended; every loss message says it.
type registration bool

func (r registration) String() string {
	if r {
		return "after its executor registered"
	}
	return "before its executor registered"
}

// podRef names an executor's pod: by name when it was seen, else by the
// executor's id.
func podRef(id executorid.ID, p *snapshot.Pod) string {
	if p == nil || p.Name == "" {
		return fmt.Sprintf("pod of executor %d", id)
	}
	return "pod " + p.Name
}

// loss builds a loss message: `SUBJECT WHAT WHEN[: DETAIL]`, such as
// "pod NAME was deleted by the driver after its executor registered".
func loss(subject, what string, when registration, detail string) string {
	msg := subject + " " + what + " " + when.String()
	if detail = strings.TrimSpace(detail); detail != "" {
		msg += ": " + detail
	}
	return msg
}

// maxTerminationMessage bounds how much of a container's termination
// message (with FallbackToLogsOnError, the end of its log) a reason quotes.
const maxTerminationMessage = 1024

// executorContainer is the name of the executor's container: the
// configured one, else the pod's first container.
func executorContainer(p *snapshot.Pod, name string) string {
	if name != "" || len(p.Containers) == 0 {
		return name
	}
	return p.Containers[0].Name
}

func containerStatus(p *snapshot.Pod, name string) *corev1.ContainerStatus {
	for i := range p.ContainerStatuses {
		if p.ContainerStatuses[i].Name == name {
			return &p.ContainerStatuses[i]
		}
	}
	return nil
}

// exitCode is the executor container's exit code, 0 when it has not
// terminated.
func exitCode(p *snapshot.Pod, container string) int {
	if cs := containerStatus(p, executorContainer(p, container)); cs != nil && cs.State.Terminated != nil {
		return int(cs.State.Terminated.ExitCode)
	}
	return 0
}

// memoryLimit is a container's memory limit as written in the pod spec (or
// the pod-level limit), "" when it has none.
func memoryLimit(p *snapshot.Pod, container string) string {
	for _, c := range p.Containers {
		if c.Name == container && c.MemoryLimit != "" {
			return c.MemoryLimit
		}
	}
	return p.MemoryLimit
}

// signalNames names the signals a container is commonly killed with.
var signalNames = map[int]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
	13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
}

// describeExitCode says what an exit code of a drover executor means. The
// executor is a Go program: it exits 1 on an error it reports, and the Go
// runtime exits 2 on an unrecovered panic or a fatal runtime error (drover
// also exits 2 on an invalid executor environment). Codes above 128 are
// 128 + the number of the signal that killed the process.
func describeExitCode(code int) string {
	switch code {
	case 0:
		return "exited cleanly, but an executor must not exit on its own"
	case 1:
		return "exited with an error; see the executor's log"
	case 2:
		return "exited with a Go panic or fatal runtime error (or an invalid executor environment); see the executor's log"
	case 126:
		return "command is not executable: wrong permissions or a binary built for another architecture"
	case 127:
		return "command not found in the image"
	case 137:
		return "killed by SIGKILL, possibly the container's memory limit"
	case 139:
		return "killed by SIGSEGV, a segmentation fault"
	case 143:
		return "killed by SIGTERM"
	}
	if sig := code - 128; sig > 0 && sig < 128 {
		if name, ok := signalNames[sig]; ok {
			return "killed by " + name
		}
		return fmt.Sprintf("killed by signal %d", sig)
	}
	return "exited with an unexpected code"
}

// disruptions says, for each DisruptionTarget reason drover names, who
// deleted the pod; {node} stands for the pod's node.
var disruptions = map[string]string{
	corev1.PodReasonPreemptionByScheduler: "was preempted by the scheduler to make room for a higher-priority pod",
	reasonEvictionByAPI:                   "was evicted through the eviction API (for example by kubectl drain)",
	reasonTaintManager:                    "was deleted by the taint manager because its node {node} has a NoExecute taint (often: the node is not ready or unreachable)",
	reasonPodGC:                           "was deleted by the pod garbage collector because its node {node} is gone",
	corev1.PodReasonTerminationByKubelet:  "was terminated by the kubelet (for example on node shutdown)",
}

// disruptionCauses is the loss cause of each DisruptionTarget reason; any
// other is CauseDeleted.
var disruptionCauses = map[string]string{
	corev1.PodReasonPreemptionByScheduler: scheduler.CausePreempted,
	reasonEvictionByAPI:                   scheduler.CauseEvicted,
	reasonPodGC:                           scheduler.CauseNodeLost,
}

// queueEviction is the condition Kueue sets on a pod it stops (its
// workload preempted or otherwise evicted) before deleting it, nil if the
// pod has none that holds.
func queueEviction(p *snapshot.Pod) *corev1.PodCondition {
	if c := condition(p, conditionKueueTermination); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	return nil
}

// queueEvicted says who ended a pod Kueue stopped: "was preempted by queue
// X" when its workload made room for another, else "was evicted by queue
// X (reason)".
func queueEvicted(p *snapshot.Pod, c *corev1.PodCondition) (what, cause string) {
	queue := p.Queue
	if queue == "" {
		queue = "(unnamed)"
	}
	why, _ := strings.CutPrefix(c.Reason, kueueEvictedPrefix)
	if why == kueueReasonPreempted {
		return "was preempted by queue " + queue, scheduler.CausePreempted
	}
	return fmt.Sprintf("was evicted by queue %s (%s)", queue, c.Reason), scheduler.CauseEvicted
}

// disruption is the pod's DisruptionTarget condition, nil if it has none
// that holds.
func disruption(p *snapshot.Pod) *corev1.PodCondition {
	if c := condition(p, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue && c.Reason != "" {
		return c
	}
	return nil
}

// endedByCluster reports whether the pod's status says the cluster ended
// it: a DisruptionTarget condition (preemption, the eviction API, the taint
// manager, the pod garbage collector, the kubelet), Kueue's stop of its
// workload (preemption by its queue), a kubelet eviction or a lost node. The driver never causes these, so they win over its own
// request to delete the pod, which may come after them (an executor told
// to leave by SIGTERM is dropped by the driver, which then deletes its
// pod).
func endedByCluster(p *snapshot.Pod) bool {
	return disruption(p) != nil || queueEviction(p) != nil || p.Reason == podReasonEvicted ||
		p.Reason == podReasonNodeLost
}

// deletedReason is the loss of an executor whose pod someone other than
// the driver deleted. It names who when the pod's status says so: the
// kubelet's eviction, a DisruptionTarget condition, a lost node. The exit
// code is the container's, if it ended.
func deletedReason(p *snapshot.Pod, container string, when registration) scheduler.LossReason {
	r := scheduler.LossReason{ExitCode: exitCode(p, container), Cause: scheduler.CauseDeleted}
	what, detail := "was deleted by a user or the cluster (not the driver)", ""
	c := disruption(p)
	switch q := queueEviction(p); {
	case q != nil:
		what, r.Cause = queueEvicted(p, q)
		detail = q.Message
	case p.Reason == podReasonEvicted:
		what, detail, r.Cause = "was evicted by the kubelet", p.Message, scheduler.CauseEvicted
	case c != nil:
		if w, ok := disruptions[c.Reason]; ok {
			what = strings.ReplaceAll(w, "{node}", p.NodeName)
		}
		if cause, ok := disruptionCauses[c.Reason]; ok {
			r.Cause = cause
		}
		detail = c.Message
	case p.Reason == podReasonNodeLost:
		lost, _ := nodeLost(p)
		what, detail, r.Cause = "was lost with its node", lost.message, scheduler.CauseNodeLost
	}
	r.Message = loss("pod "+p.Name, what, when, detail)
	return r
}

// killedReason is the loss of an executor whose pod the driver deleted.
func killedReason(subject string, when registration) scheduler.LossReason {
	return scheduler.LossReason{Message: loss(subject, "was deleted by the driver", when, ""), Cause: scheduler.CauseKilled}
}

// missingReason is the loss of a registered executor whose pod a full list
// of the application's pods does not contain, though the driver did not
// delete it.
func missingReason(id executorid.ID, when registration) scheduler.LossReason {
	return scheduler.LossReason{Message: loss(podRef(id, nil), "was deleted by a user or the cluster (not the driver)", when,
		"it is not found in a full list of the application's pods"), Cause: scheduler.CauseDeleted}
}

// endedReason is the loss of an executor whose pod failed or whose
// executor container exited, and whether it counts as an executor failure.
// A failed pod counts unless its node was lost; a succeeded one does not
// (Spark's rule): the driver tells executors to exit, so a clean exit is
// usually the end of an executor the backend had already removed.
func endedReason(p *snapshot.Pod, failed bool, container string, when registration) (scheduler.LossReason, bool) {
	name := p.Name
	exec := executorContainer(p, container)
	r := scheduler.LossReason{ExitCode: exitCode(p, container), CausedByApp: true, Cause: scheduler.CauseExited}
	switch p.Reason {
	case podReasonEvicted:
		// The kubelet evicts under node pressure. That is the node's doing,
		// though the pod's own use often caused it, so it still counts.
		r.CausedByApp, r.Cause = false, scheduler.CauseEvicted
		r.Message = loss("pod "+name, "was evicted by the kubelet", when, p.Message)
		return r, true
	case podReasonNodeLost:
		lost, _ := nodeLost(p)
		r.CausedByApp, r.Cause = false, scheduler.CauseNodeLost
		r.Message = loss("pod "+name, "was lost with its node", when, lost.message)
		return r, false
	}

	var b strings.Builder
	primary := primaryContainer(p, exec)
	switch {
	case primary == nil && failed:
		fmt.Fprintf(&b, "pod %s failed %s", name, when)
	case primary == nil:
		fmt.Fprintf(&b, "pod %s ended %s: the executor %s", name, when, describeExitCode(0))
	default:
		t := primary.State.Terminated
		who := "executor container"
		if primary.Name != exec {
			who = "container " + primary.Name
		}
		r.ExitCode = int(t.ExitCode)
		verb := "failed"
		if !failed {
			verb = "ended"
		}
		fmt.Fprintf(&b, "pod %s %s %s: ", name, verb, when)
		switch t.Reason {
		case containerOOMKilled:
			r.Cause = scheduler.CauseOOMKilled
			fmt.Fprintf(&b, "%s was OOMKilled by the kernel", who)
			if limit := memoryLimit(p, primary.Name); limit != "" {
				fmt.Fprintf(&b, " (memory limit %s)", limit)
			} else {
				b.WriteString(" (no memory limit: the node ran out of memory)")
			}
			if primary.Name == exec {
				b.WriteString("; raise spark.executor.memoryOverhead or spark.executor.memory")
			}
		case containerStartError, containerCannotRun:
			r.Cause = scheduler.CauseStartFailed
			fmt.Fprintf(&b, "%s could not start", who)
		default:
			fmt.Fprintf(&b, "%s %s", who, describeExitCode(int(t.ExitCode)))
		}
		if m := strings.TrimSpace(t.Message); m != "" {
			if len(m) > maxTerminationMessage {
				m = m[:maxTerminationMessage] + "…"
			}
			fmt.Fprintf(&b, "; termination message: %s", m)
		}
	}
	if p.Reason != "" || p.Message != "" {
		fmt.Fprintf(&b, "; pod status: %s", join(p.Reason, p.Message))
	}
	for _, cs := range p.ContainerStatuses {
		if primary != nil && cs.Name == primary.Name {
			continue
		}
		if d := describeContainer(cs); d != "" {
			fmt.Fprintf(&b, "; container %s %s", cs.Name, d)
		}
	}
	r.Message = b.String()
	return r, failed
}

// primaryContainer is the container whose end explains the pod's: one that
// was OOM-killed (the executor's first), else the executor's if it
// terminated with an error, else the first that did, else the executor's if
// it terminated at all.
func primaryContainer(p *snapshot.Pod, exec string) *corev1.ContainerStatus {
	statuses := p.ContainerStatuses
	var ordered []*corev1.ContainerStatus
	if cs := containerStatus(p, exec); cs != nil {
		ordered = append(ordered, cs)
	}
	for i := range statuses {
		if statuses[i].Name != exec {
			ordered = append(ordered, &statuses[i])
		}
	}
	for _, cs := range ordered {
		if t := cs.State.Terminated; t != nil && t.Reason == containerOOMKilled {
			return cs
		}
	}
	for _, cs := range ordered {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return cs
		}
	}
	if cs := containerStatus(p, exec); cs != nil && cs.State.Terminated != nil {
		return cs
	}
	return nil
}

// describeContainer summarises a container that did not end well, "" for
// one that runs or ended cleanly.
func describeContainer(cs corev1.ContainerStatus) string {
	switch {
	case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
		t := cs.State.Terminated
		if t.Reason != "" {
			return fmt.Sprintf("terminated: %s, exit code %d", t.Reason, t.ExitCode)
		}
		return fmt.Sprintf("terminated with exit code %d", t.ExitCode)
	case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
		return "waiting: " + join(cs.State.Waiting.Reason, cs.State.Waiting.Message)
	}
	return ""
}
