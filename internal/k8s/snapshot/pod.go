package snapshot

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/executorid"
)

// Pod is what the driver reads of an executor pod: the snapshot (the
// executor id, inactive and queue labels, scheduling gates, phase,
// container states, restart policy, deletion), the allocator (node,
// creation time, the scheduler's condition) and the lifecycle's loss
// reasons (conditions, status reason and message, the containers' names,
// exit codes, waiting reasons and memory limits). The driver caches one per
// executor: a trimmed corev1.Pod cost about 1,900 bytes, 1,280 of them the
// struct itself and 600 its labels map, this about 370 (see NewPod).
// Pods, and the slices they hold, are shared and never changed in place.
type Pod struct {
	Name            string
	ResourceVersion string
	// ID is the executor id of the pod's label; Executor is false for a pod
	// without a valid one, or with the driver's.
	ID       executorid.ID
	Executor bool
	// Inactive is the pod's LabelInactive label set to "true".
	Inactive bool
	// Deleting says the pod has a deletion timestamp.
	Deleting bool
	// Queue is the pod's Kueue queue label.
	Queue string
	// Created is the pod's creation time, zero when it has none.
	Created time.Time

	NodeName        string
	RestartPolicy   corev1.RestartPolicy
	SchedulingGates []corev1.PodSchedulingGate
	// Containers are the spec's containers; MemoryLimit is the pod-level
	// memory limit, "" when there is none.
	Containers  []Container
	MemoryLimit string

	Phase   corev1.PodPhase
	Reason  string
	Message string
	// Conditions keep their types, statuses, reasons and messages; the
	// container statuses their names and states (a running container's
	// start time dropped), readiness, restart counts and last terminations.
	Conditions            []corev1.PodCondition
	ContainerStatuses     []corev1.ContainerStatus
	InitContainerStatuses []corev1.ContainerStatus
}

// Container is a spec container's name and memory limit ("" for none).
type Container struct {
	Name        string
	MemoryLimit string
}

// NewPod returns what the driver reads of p. The rest of a decoded pod (the
// containers' command, environment, mounts and probes, volumes,
// tolerations, affinity, annotations, labels, managed fields, owner
// references, addresses) is most of its memory, which with thousands of
// executors is tens of megabytes that nothing reads. The result shares its
// name and resource version with p, its containers, container statuses
// and conditions with other pods of the same shape, and its node, phase,
// restart policy and queue with other pods (see shared).
func NewPod(p *corev1.Pod) *Pod {
	id, ok := ExecutorID(p)
	c := &Pod{
		Name: p.Name, ResourceVersion: p.ResourceVersion,
		ID: id, Executor: ok, Inactive: p.Labels[LabelInactive] == "true", Deleting: p.DeletionTimestamp != nil,
		Created:  p.CreationTimestamp.Time,
		NodeName: internString(p.Spec.NodeName), RestartPolicy: corev1.RestartPolicy(internString(string(p.Spec.RestartPolicy))),
		SchedulingGates: p.Spec.SchedulingGates,
		Containers:      compactContainers(p.Spec.Containers),
		Phase:           corev1.PodPhase(internString(string(p.Status.Phase))),
		Reason:          p.Status.Reason, Message: p.Status.Message,
		Conditions:            compactConditions(p.Status.Conditions),
		ContainerStatuses:     compactStatuses(p.Status.ContainerStatuses),
		InitContainerStatuses: compactStatuses(p.Status.InitContainerStatuses),
	}
	if q := p.Labels[LabelKueueQueue]; q != "" {
		c.Queue = internString(q)
	}
	if r := p.Spec.Resources; r != nil {
		c.MemoryLimit = memoryLimit(r.Limits)
	}
	return c
}

// NewPods is NewPod of each of pods.
func NewPods(pods ...*corev1.Pod) []*Pod {
	out := make([]*Pod, len(pods))
	for i, p := range pods {
		out[i] = NewPod(p)
	}
	return out
}

// memoryLimit is the memory limit in rl as the spec writes it, "" for none.
func memoryLimit(rl corev1.ResourceList) string {
	if q, ok := rl[corev1.ResourceMemory]; ok {
		return q.String()
	}
	return ""
}

// shared holds one copy of each distinct container list, container status
// list, condition list and string (node names, phases, restart policies,
// queues) of Pods, by a key of what they hold: an application's executors
// mostly have the same (one container with the same limit; running and
// ready; the same five conditions once their times are dropped), kept once
// instead of once per pod. No reader may change them. When a table reaches
// maxShared entries it starts again, so pods of new shapes share too.
var shared = struct {
	sync.Mutex
	containers map[string][]Container
	statuses   map[string][]corev1.ContainerStatus
	conditions map[string][]corev1.PodCondition
	strings    map[string]string
}{containers: map[string][]Container{}, statuses: map[string][]corev1.ContainerStatus{},
	conditions: map[string][]corev1.PodCondition{}, strings: map[string]string{}}

// maxShared bounds each table of shared.
const maxShared = 256

// share returns the value in m for key, after storing v there if there is
// none; the caller holds shared's lock.
func share[T any](m map[string]T, key string, v T) T {
	if old, ok := m[key]; ok {
		return old
	}
	if len(m) >= maxShared {
		clear(m)
	}
	m[key] = v
	return v
}

// internString returns the shared copy of s: a decoded pod's strings are
// each their own allocation.
func internString(s string) string {
	if s == "" {
		return ""
	}
	shared.Lock()
	defer shared.Unlock()
	return share(shared.strings, s, s)
}

// compactContainers keeps the containers' names and memory limits.
func compactContainers(in []corev1.Container) []Container {
	if len(in) == 0 {
		return nil
	}
	out := make([]Container, len(in))
	var key strings.Builder
	for i, ct := range in {
		out[i] = Container{Name: ct.Name, MemoryLimit: memoryLimit(ct.Resources.Limits)}
		key.WriteString(out[i].Name)
		key.WriteByte(0)
		key.WriteString(out[i].MemoryLimit)
		key.WriteByte(0)
	}
	shared.Lock()
	defer shared.Unlock()
	return share(shared.containers, key.String(), out)
}

// compactConditions keeps the conditions' types, statuses, reasons and
// messages.
func compactConditions(in []corev1.PodCondition) []corev1.PodCondition {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.PodCondition, len(in))
	var key strings.Builder
	for i, c := range in {
		out[i] = corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
		for _, f := range []string{string(c.Type), string(c.Status), c.Reason, c.Message} {
			key.WriteString(f)
			key.WriteByte(0)
		}
	}
	shared.Lock()
	defer shared.Unlock()
	return share(shared.conditions, key.String(), out)
}

// running is the state of every running container in a Pod: the start
// time is not read.
var running = &corev1.ContainerStateRunning{}

// compactStatuses keeps the containers' names and states, where their
// exit codes and waiting reasons are. Lists with an ended container (a
// termination, its exit code and message) are the pod's own.
func compactStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	var key strings.Builder
	own := false
	for i, cs := range in {
		st := cs.State
		if st.Running != nil {
			st.Running = running
		}
		out[i] = corev1.ContainerStatus{Name: cs.Name, State: st, LastTerminationState: cs.LastTerminationState,
			Ready: cs.Ready, RestartCount: cs.RestartCount, Started: cs.Started}
		if st.Terminated != nil || cs.LastTerminationState != (corev1.ContainerState{}) {
			own = true
			continue
		}
		started := "-"
		if cs.Started != nil {
			started = strconv.FormatBool(*cs.Started)
		}
		fmt.Fprintf(&key, "%s\x00%t %s %d %t", cs.Name, cs.Ready, started, cs.RestartCount, st.Running != nil)
		if w := st.Waiting; w != nil {
			fmt.Fprintf(&key, "\x00%s\x00%s", w.Reason, w.Message)
		}
		key.WriteByte(0)
	}
	if own {
		return out
	}
	shared.Lock()
	defer shared.Unlock()
	return share(shared.statuses, key.String(), out)
}
