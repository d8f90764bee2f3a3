package snapshot

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/drover-project/drover/internal/executorid"
)

// Pod is what the driver reads of an executor pod: the snapshot (the
// executor id, inactive and queue labels, scheduling gates, phase,
// container states, restart policy, deletion), registration (name, IP,
// phase, deletion), the allocator (node,
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
	// IP is the pod's address (status.podIP), "" until it has one: an
	// executor registers from it.
	IP string
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
	c := &Pod{
		Name: p.Name, ResourceVersion: p.ResourceVersion,
		Inactive: p.Labels[LabelInactive] == "true", Deleting: p.DeletionTimestamp != nil,
		Queue: p.Labels[LabelKueueQueue], Created: p.CreationTimestamp.Time,
		NodeName: p.Spec.NodeName, RestartPolicy: p.Spec.RestartPolicy,
		SchedulingGates: p.Spec.SchedulingGates,
		Phase:           p.Status.Phase, Reason: p.Status.Reason, Message: p.Status.Message, IP: p.Status.PodIP,
		ContainerStatuses:     trimStatuses(p.Status.ContainerStatuses),
		InitContainerStatuses: trimStatuses(p.Status.InitContainerStatuses),
	}
	c.ID, c.Executor = ExecutorID(p)
	if n := len(p.Spec.Containers); n > 0 {
		c.Containers = make([]Container, n)
		for i, ct := range p.Spec.Containers {
			c.Containers[i] = Container{Name: ct.Name, MemoryLimit: memoryLimit(ct.Resources.Limits)}
		}
	}
	if r := p.Spec.Resources; r != nil {
		c.MemoryLimit = memoryLimit(r.Limits)
	}
	if n := len(p.Status.Conditions); n > 0 {
		c.Conditions = make([]corev1.PodCondition, n)
		for i, cd := range p.Status.Conditions {
			c.Conditions[i] = corev1.PodCondition{Type: cd.Type, Status: cd.Status, Reason: cd.Reason, Message: cd.Message}
		}
	}
	return c.share(false)
}

// share finishes a Pod that NewPod or DecodePod filled in: its node, restart
// policy, phase and queue become the shared strings, its containers,
// conditions and container statuses the shared lists of their shape. Both
// build Pods through it, so a decoded pod is what NewPod makes of it.
// Scratch says c's lists are DecodePod's scratch, which c must not keep.
func (c *Pod) share(scratch bool) *Pod {
	c.NodeName = internString(c.NodeName)
	c.RestartPolicy = corev1.RestartPolicy(internString(string(c.RestartPolicy)))
	c.Phase = corev1.PodPhase(internString(string(c.Phase)))
	c.Queue = internString(c.Queue)
	c.Containers = shareContainers(c.Containers, scratch)
	c.Conditions = shareConditions(c.Conditions, scratch)
	c.ContainerStatuses = shareStatuses(c.ContainerStatuses, scratch)
	c.InitContainerStatuses = shareStatuses(c.InitContainerStatuses, scratch)
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
	// quantities are the canonical forms of quantities, by their text.
	quantities map[string]string
}{containers: map[string][]Container{}, statuses: map[string][]corev1.ContainerStatus{},
	conditions: map[string][]corev1.PodCondition{}, strings: map[string]string{}, quantities: map[string]string{}}

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

// internBytes is internString(string(b)), without making the string when
// the shared copy exists.
func internBytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	shared.Lock()
	defer shared.Unlock()
	if s, ok := shared.strings[string(b)]; ok {
		return s
	}
	s := string(b)
	return share(shared.strings, s, s)
}

// canonicalQuantity is the String of the quantity whose text is b, as the
// standard decoder parses it: "1.5Gi" and "1536Mi" are both "1536Mi".
// Pods mostly carry few distinct limits, so each is parsed once.
func canonicalQuantity(b []byte) (string, error) {
	shared.Lock()
	s, ok := shared.quantities[string(b)]
	shared.Unlock()
	if ok {
		return s, nil
	}
	q, err := resource.ParseQuantity(string(b))
	if err != nil {
		return "", fmt.Errorf("memory limit: %w", err)
	}
	s = q.String()
	shared.Lock()
	defer shared.Unlock()
	return share(shared.quantities, string(b), s), nil
}

// shareList returns the list in m for key, after storing in there if
// there is none: in itself when it is the Pod's own, a copy when it is
// scratch (DecodePod's). The key is looked up without being made a string.
func shareList[T any](m map[string][]T, key []byte, in []T, scratch bool) []T {
	shared.Lock()
	defer shared.Unlock()
	if old, ok := m[string(key)]; ok {
		return old
	}
	if scratch {
		in = slices.Clone(in)
	}
	return share(m, string(key), in)
}

// keySize is the room on the stack for a list's key, enough for the usual
// lists.
const keySize = 256

// shareContainers returns the shared list equal to in.
func shareContainers(in []Container, scratch bool) []Container {
	if len(in) == 0 {
		return nil
	}
	key := make([]byte, 0, keySize)
	for _, ct := range in {
		key = append(append(key, ct.Name...), 0)
		key = append(append(key, ct.MemoryLimit...), 0)
	}
	return shareList(shared.containers, key, in, scratch)
}

// shareConditions returns the shared list equal to in, conditions with
// only their types, statuses, reasons and messages.
func shareConditions(in []corev1.PodCondition, scratch bool) []corev1.PodCondition {
	if len(in) == 0 {
		return nil
	}
	key := make([]byte, 0, keySize)
	for _, c := range in {
		key = append(append(key, c.Type...), 0)
		key = append(append(key, c.Status...), 0)
		key = append(append(key, c.Reason...), 0)
		key = append(append(key, c.Message...), 0)
	}
	return shareList(shared.conditions, key, in, scratch)
}

// running is the state of every running container in a Pod: the start
// time is not read.
var running = &corev1.ContainerStateRunning{}

// trimStatuses keeps the containers' names and states, where their exit
// codes and waiting reasons are, readiness, restart counts and last
// terminations.
func trimStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, cs := range in {
		out[i] = corev1.ContainerStatus{Name: cs.Name, State: cs.State, LastTerminationState: cs.LastTerminationState,
			Ready: cs.Ready, RestartCount: cs.RestartCount, Started: cs.Started}
	}
	return out
}

// shareStatuses returns the shared list equal to in, trimmed statuses,
// after dropping running containers' start times. Lists with an ended
// container (a termination, its exit code and message) stay the pod's own.
func shareStatuses(in []corev1.ContainerStatus, scratch bool) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	key := make([]byte, 0, keySize)
	own := false
	for i := range in {
		cs := &in[i]
		if cs.State.Running != nil {
			cs.State.Running = running
		}
		if cs.State.Terminated != nil || cs.LastTerminationState != (corev1.ContainerState{}) {
			own = true
			continue
		}
		key = append(append(key, cs.Name...), 0)
		key = strconv.AppendBool(key, cs.Ready)
		key = append(key, ' ')
		if cs.Started != nil {
			key = strconv.AppendBool(key, *cs.Started)
		} else {
			key = append(key, '-')
		}
		key = append(key, ' ')
		key = strconv.AppendInt(key, int64(cs.RestartCount), 10)
		key = append(key, ' ')
		key = strconv.AppendBool(key, cs.State.Running != nil)
		if w := cs.State.Waiting; w != nil {
			key = append(append(key, 0), w.Reason...)
			key = append(append(key, 0), w.Message...)
		}
		key = append(key, 0)
	}
	if own {
		if scratch {
			return slices.Clone(in)
		}
		return in
	}
	return shareList(shared.statuses, key, in, scratch)
}
