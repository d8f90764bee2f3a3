package snapshot

import (
	"fmt"
	"sort"
	"time"

	"github.com/drover-project/drover/internal/executorid"
	corev1 "k8s.io/api/core/v1"
)

// Labels drover puts on the pods it creates; Spark's names, so tools that
// know Spark on Kubernetes recognise drover's pods.
const (
	LabelAppID      = "spark-app-selector"
	LabelRole       = "spark-role"
	LabelExecutorID = "spark-exec-id"
	LabelAppName    = "spark-app-name"
	LabelInactive   = "spark-exec-inactive"
	RoleExecutor    = "executor"
	RoleDriver      = "driver"
)

// State is an executor pod's state as the driver sees it.
type State int

const (
	Pending State = iota
	Running
	Succeeded
	Failed
	Deleted
	Unknown
	// Gated is a pending pod held by a scheduling gate: a queue (Kueue)
	// has not admitted it. It waits without a problem: no start timeout,
	// no unschedulable back-off.
	Gated
)

func (s State) String() string {
	switch s {
	case Pending:
		return "Pending"
	case Running:
		return "Running"
	case Succeeded:
		return "Succeeded"
	case Failed:
		return "Failed"
	case Deleted:
		return "Deleted"
	case Unknown:
		return "Unknown"
	case Gated:
		return "Gated"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Final reports whether the pod's executor is gone for good.
func (s State) Final() bool { return s == Succeeded || s == Failed || s == Deleted }

// Waiting reports whether the pod has not started: Pending, or Gated.
func (s State) Waiting() bool { return s == Pending || s == Gated }

// ExecutorPod is one executor's pod and its classified state.
type ExecutorPod struct {
	ID    executorid.ID
	Pod   *Pod
	State State
}

// Snapshot is the set of the application's executor pods at one moment.
type Snapshot struct {
	Pods map[executorid.ID]ExecutorPod
	// Time is when the snapshot was taken.
	Time time.Time
}

// IDs returns the executor ids in the snapshot, sorted.
func (s Snapshot) IDs() []executorid.ID {
	ids := make([]executorid.ID, 0, len(s.Pods))
	for id := range s.Pods {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// New classifies pods into a snapshot. Pods without a numeric executor id
// label, or labelled inactive, are not executors the driver tracks.
func New(pods []*Pod, container string, now time.Time) Snapshot {
	s := Snapshot{Pods: make(map[executorid.ID]ExecutorPod, len(pods)), Time: now}
	for _, p := range pods {
		if e := classify(p, container); e.ok {
			s.Pods[e.ep.ID] = e.ep
		}
	}
	return s
}

// classify is New's entry for one pod.
func classify(p *Pod, container string) entry {
	if p.Inactive || !p.Executor {
		return entry{}
	}
	return entry{ep: ExecutorPod{ID: p.ID, Pod: p, State: Classify(p, container)}, ok: true}
}

// ExecutorID is the executor id a pod's label gives, or false for a pod
// without one.
func ExecutorID(p *corev1.Pod) (executorid.ID, bool) {
	return executorIDOf(p.Labels[LabelExecutorID])
}

// executorIDOf is ExecutorID of a pod whose executor id label is label.
func executorIDOf(label string) (executorid.ID, bool) {
	id, err := executorid.Parse(label)
	return id, err == nil && id != executorid.Driver
}

// Classify maps a pod to its executor state with Spark's rules: a pod being
// deleted is Deleted unless it still runs, so a graceful termination keeps
// the executor until its container ends.
func Classify(p *Pod, container string) State {
	phase := p.Phase
	if p.Deleting && phase != corev1.PodRunning {
		return Deleted
	}
	switch phase {
	case corev1.PodPending:
		if len(p.SchedulingGates) > 0 {
			return Gated
		}
		return Pending
	case corev1.PodRunning:
		// With restartPolicy Never, any container that ended with a
		// non-zero code fails the executor (sidecars included).
		for _, cs := range p.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				if t.ExitCode != 0 && p.RestartPolicy == corev1.RestartPolicyNever {
					return Failed
				}
				if cs.Name == container || container == "" {
					if t.ExitCode == 0 {
						return Succeeded
					}
					return Failed
				}
			}
		}
		return Running
	case corev1.PodSucceeded:
		return Succeeded
	case corev1.PodFailed:
		return Failed
	}
	return Unknown
}

// Kueue's names for plain pods: the queue label, and the gate it puts on
// pods until their workload is admitted.
const (
	LabelKueueQueue = "kueue.x-k8s.io/queue-name"
	GateKueue       = "kueue.x-k8s.io/admission"
)

// Gate names what holds a gated pod: "queue X" when Kueue gates it for its
// queue, else its first scheduling gate; "" for a pod without gates.
func Gate(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	return gate(p.Spec.SchedulingGates, p.Labels[LabelKueueQueue])
}

// Gate is Gate of the pod p was made from.
func (p *Pod) Gate() string {
	if p == nil {
		return ""
	}
	return gate(p.SchedulingGates, p.Queue)
}

func gate(gates []corev1.PodSchedulingGate, queue string) string {
	if len(gates) == 0 {
		return ""
	}
	for _, g := range gates {
		if g.Name == GateKueue && queue != "" {
			return "queue " + queue
		}
	}
	return "scheduling gate " + gates[0].Name
}
