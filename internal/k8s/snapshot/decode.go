package snapshot

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Meta is what a watch needs of a decoded pod besides its Pod.
type Meta struct {
	Namespace string
	// InitialEventsEnd is the annotation InitialEventsAnnotation set to
	// "true": the bookmark that ends a watch list's initial events.
	InitialEventsEnd bool
}

// InitialEventsAnnotation is metav1.InitialEventsAnnotationKey.
const InitialEventsAnnotation = "k8s.io/initial-events-end"

// DecodePod is NewPod of the pod whose protobuf encoding (a
// k8s.io/api/core/v1 Pod message, without the runtime envelope) is b,
// without decoding the rest of it: a watched executor pod carries its
// managed fields, environment, mounts and probes, which took the driver
// about 36 µs a watch event to decode and then to collect as garbage. When
// m is not nil it also gets the pod's namespace and whether it ends a
// watch list's initial events.
//
// Where the encoding holds what this reader does not expect of an encoder
// (a field of the wrong wire type, a varint longer than protobuf allows,
// an unmatched group) it decodes b the standard way, so its answer is
// NewPod's, or the standard decoder's error.
func DecodePod(b []byte, m *Meta) (*Pod, error) {
	if p, err := decodeFast(b, m); err == nil {
		return p, nil
	}
	var p corev1.Pod
	if err := p.Unmarshal(b); err != nil {
		return nil, fmt.Errorf("decoding a pod: %w", err)
	}
	if m != nil {
		*m = Meta{Namespace: p.Namespace, InitialEventsEnd: p.Annotations[InitialEventsAnnotation] == "true"}
	}
	return NewPod(&p), nil
}

// decodeFast is DecodePod without the standard decoder.
func decodeFast(b []byte, m *Meta) (*Pod, error) {
	r := readers.Get().(*podReader)
	defer func() {
		// Nothing of the pod stays in the pool.
		*r = podReader{}
		readers.Put(r)
	}()
	r.p.Containers, r.limits = r.containers[:0], r.limitsScratch[:0]
	r.p.Conditions = r.conditions[:0]
	r.p.ContainerStatuses, r.p.InitContainerStatuses = r.statuses[:0], r.initStatuses[:0]
	if err := r.pod(b); err != nil {
		return nil, err
	}
	return r.finish(m)
}

// readers keep podReaders, with their scratch lists, between pods.
var readers = sync.Pool{New: func() any { return new(podReader) }}

// podReader is what DecodePod has read so far of a pod. It follows the
// generated decoder (gogo protobuf): a message field that comes twice is
// merged, a repeated one appended to, a map entry or scalar that comes
// again replaces the earlier one. Label values and quantities stay slices
// of the input until finish. Its lists start in its scratch arrays: most
// pods' are the shared ones, which need no copy.
type podReader struct {
	p Pod

	containers    [2]Container
	limitsScratch [2]quantity
	conditions    [6]corev1.PodCondition
	statuses      [2]corev1.ContainerStatus
	initStatuses  [2]corev1.ContainerStatus

	namespace          []byte
	id, inactive       []byte
	queue, initialEnds []byte

	// limits are the containers' memory limits, podLimit the pod's.
	limits   []quantity
	podLimit quantity
}

// quantity is a resource.Quantity as read: set says the map held one,
// given that it had its string, which is s.
type quantity struct {
	set, given bool
	s          []byte
}

// Field numbers of k8s.io/api/core/v1 and k8s.io/apimachinery's meta/v1
// generated.proto that the driver reads.
const (
	podMetadata, podSpec, podStatus = 1, 2, 3

	metaName, metaNamespace, metaResourceVersion = 1, 3, 6
	metaCreation, metaDeletion                   = 8, 9
	metaLabels, metaAnnotations                  = 11, 12

	specContainers, specRestartPolicy, specNodeName = 2, 3, 10
	specSchedulingGates, specResources              = 38, 40

	containerName, containerResources = 1, 8
	resourcesLimits                   = 1

	statusPhase, statusConditions, statusMessage, statusReason = 1, 2, 3, 4
	statusInitContainerStatuses, statusContainerStatuses       = 10, 8
	statusPodIP                                                = 6

	conditionType, conditionStatus, conditionReason, conditionMessage = 1, 2, 5, 6

	csName, csState, csLastState, csReady, csRestartCount, csStarted = 1, 2, 3, 4, 5, 9

	stateWaiting, stateRunning, stateTerminated = 1, 2, 3

	waitingReason, waitingMessage = 1, 2
	runningStartedAt              = 1

	termExitCode, termSignal, termReason, termMessage = 1, 2, 3, 4
	termStartedAt, termFinishedAt, termContainerID    = 5, 6, 7

	timeSeconds, timeNanos = 1, 2

	gateName = 1

	entryKey, entryValue = 1, 2
	quantityString       = 1
)

func (r *podReader) pod(b []byte) error {
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case podMetadata:
			err = with(f, r.metadata)
		case podSpec:
			err = with(f, r.spec)
		case podStatus:
			err = with(f, r.status)
		}
		return err
	})
}

func (r *podReader) metadata(b []byte) error {
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case metaName:
			r.p.Name, err = f.str()
		case metaNamespace:
			r.namespace, err = f.bytes()
		case metaResourceVersion:
			r.p.ResourceVersion, err = f.str()
		case metaCreation:
			var v []byte
			if v, err = f.bytes(); err == nil {
				r.p.Created, err = readTime(v)
			}
		case metaDeletion:
			var v []byte
			if v, err = f.bytes(); err == nil {
				_, err = readTime(v)
				r.p.Deleting = true
			}
		case metaLabels:
			err = with(f, r.label)
		case metaAnnotations:
			err = with(f, r.annotation)
		}
		return err
	})
}

// label reads a labels map entry, keeping the labels the driver reads.
func (r *podReader) label(b []byte) error {
	k, v, err := stringEntry(b)
	switch string(k) {
	case LabelExecutorID:
		r.id = v
	case LabelInactive:
		r.inactive = v
	case LabelKueueQueue:
		r.queue = v
	}
	return err
}

// annotation reads an annotations map entry, keeping the one a watch
// reads.
func (r *podReader) annotation(b []byte) error {
	k, v, err := stringEntry(b)
	if string(k) == InitialEventsAnnotation {
		r.initialEnds = v
	}
	return err
}

// finish turns what was read into the Pod NewPod makes, and fills m.
func (r *podReader) finish(m *Meta) (*Pod, error) {
	p := new(Pod)
	*p = r.p
	p.ID, p.Executor = executorIDOf(string(r.id))
	p.Inactive = string(r.inactive) == "true"
	p.Queue = internBytes(r.queue)
	var err error
	for i := range p.Containers {
		if p.Containers[i].MemoryLimit, err = r.limits[i].canonical(); err != nil {
			return nil, err
		}
	}
	if p.MemoryLimit, err = r.podLimit.canonical(); err != nil {
		return nil, err
	}
	if m != nil {
		*m = Meta{Namespace: internBytes(r.namespace), InitialEventsEnd: string(r.initialEnds) == "true"}
	}
	return p.share(true), nil
}

// canonical is the limit as resource.Quantity.String gives it after the
// standard decoder parsed it, "" for none.
func (q quantity) canonical() (string, error) {
	if !q.set {
		return "", nil
	}
	if !q.given {
		var zero resource.Quantity
		return zero.String(), nil
	}
	return canonicalQuantity(q.s)
}
