package snapshot

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
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

// errWireType is a field of the wrong wire type, which the generated
// decoder rejects.
var errWireType = errors.New("protobuf field of an unexpected wire type")

// field is one field of a message: its value is v for the bytes wire
// type, x for a varint.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   []byte
	x   uint64
}

// next reads the field at the start of b and returns it with the rest of b.
func next(b []byte) (field, []byte, error) {
	// Most of a pod's fields are strings and messages with one-byte tags
	// and lengths, read here without protowire's calls.
	if len(b) >= 2 && b[0] < 0x80 && b[0]&7 == byte(protowire.BytesType) && b[0]>>3 != 0 && b[1] < 0x80 {
		if n := int(b[1]) + 2; n <= len(b) {
			return field{num: protowire.Number(b[0] >> 3), typ: protowire.BytesType, v: b[2:n]}, b[n:], nil
		}
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, nil, protowire.ParseError(n)
	}
	b = b[n:]
	f := field{num: num, typ: typ}
	switch typ {
	case protowire.VarintType:
		f.x, n = protowire.ConsumeVarint(b)
	case protowire.BytesType:
		f.v, n = protowire.ConsumeBytes(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return field{}, nil, protowire.ParseError(n)
	}
	return f, b[n:], nil
}

// bytes is a length-delimited field's value.
func (f field) bytes() ([]byte, error) {
	if f.typ != protowire.BytesType {
		return nil, errWireType
	}
	return f.v, nil
}

// str is a string field's value.
func (f field) str() (string, error) {
	v, err := f.bytes()
	return string(v), err
}

// varint is a varint field's value.
func (f field) varint() (uint64, error) {
	if f.typ != protowire.VarintType {
		return 0, errWireType
	}
	return f.x, nil
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

// eachField calls read with each field of the message b in turn, until
// one fails.
func eachField(b []byte, read func(f field) error) error {
	for len(b) > 0 {
		f, rest, err := next(b)
		if err != nil {
			return err
		}
		b = rest
		if err := read(f); err != nil {
			return err
		}
	}
	return nil
}

// with reads the message field f with read.
func with(f field, read func([]byte) error) error {
	v, err := f.bytes()
	if err != nil {
		return err
	}
	return read(v)
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

// stringEntry reads a map<string, string> entry; a missing key or value is
// "".
func stringEntry(b []byte) (k, v []byte, err error) {
	err = eachField(b, func(f field) (err error) {
		switch f.num {
		case entryKey:
			k, err = f.bytes()
		case entryValue:
			v, err = f.bytes()
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return k, v, nil
}

// readTime reads a meta/v1 Time as its decoder does: an empty message is
// the zero time, and the nanoseconds are dropped.
func readTime(b []byte) (time.Time, error) {
	if len(b) == 0 {
		return time.Time{}, nil
	}
	var secs uint64
	err := eachField(b, func(f field) (err error) {
		switch f.num {
		case timeSeconds:
			secs, err = f.varint()
		case timeNanos:
			_, err = f.varint()
		}
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(int64(secs), 0).Local(), nil
}

func (r *podReader) spec(b []byte) error {
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case specContainers:
			err = with(f, r.container)
		case specRestartPolicy:
			var v []byte
			if v, err = f.bytes(); err == nil {
				r.p.RestartPolicy = corev1.RestartPolicy(internBytes(v))
			}
		case specNodeName:
			var v []byte
			if v, err = f.bytes(); err == nil {
				r.p.NodeName = internBytes(v)
			}
		case specSchedulingGates:
			err = with(f, r.gate)
		case specResources:
			// A pod with resources has a limit of "" until a memory
			// limit comes, as NewPod's.
			err = with(f, func(v []byte) error { return readLimits(v, &r.podLimit) })
		}
		return err
	})
}

func (r *podReader) container(b []byte) error {
	var ct Container
	var limit quantity
	if err := eachField(b, func(f field) (err error) {
		switch f.num {
		case containerName:
			ct.Name, err = f.str()
		case containerResources:
			err = with(f, func(v []byte) error { return readLimits(v, &limit) })
		}
		return err
	}); err != nil {
		return err
	}
	r.p.Containers = append(r.p.Containers, ct)
	r.limits = append(r.limits, limit)
	return nil
}

// readLimits reads a ResourceRequirements message into q, the memory
// limit, which a later one replaces.
func readLimits(b []byte, q *quantity) error {
	return eachField(b, func(f field) error {
		if f.num != resourcesLimits {
			return nil
		}
		return with(f, func(v []byte) error { return readLimit(v, q) })
	})
}

// readLimit reads a limits map entry into q when its key is memory.
func readLimit(b []byte, q *quantity) error {
	var key []byte
	var val quantity
	if err := eachField(b, func(f field) (err error) {
		switch f.num {
		case entryKey:
			key, err = f.bytes()
		case entryValue:
			// Each value is a new Quantity.
			var v []byte
			if v, err = f.bytes(); err == nil {
				val, err = readQuantity(v)
			}
		}
		return err
	}); err != nil {
		return err
	}
	if string(key) == string(corev1.ResourceMemory) {
		val.set = true
		*q = val
	}
	return nil
}

// readQuantity reads a Quantity message: its string, or none.
func readQuantity(b []byte) (quantity, error) {
	var q quantity
	err := eachField(b, func(f field) (err error) {
		if f.num == quantityString {
			q.s, err = f.bytes()
			q.given = true
		}
		return err
	})
	if err != nil {
		return quantity{}, err
	}
	return q, nil
}

func (r *podReader) gate(b []byte) error {
	var g corev1.PodSchedulingGate
	err := eachField(b, func(f field) (err error) {
		if f.num == gateName {
			g.Name, err = f.str()
		}
		return err
	})
	if err != nil {
		return err
	}
	r.p.SchedulingGates = append(r.p.SchedulingGates, g)
	return nil
}

func (r *podReader) status(b []byte) error {
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case statusPhase:
			var v []byte
			if v, err = f.bytes(); err == nil {
				r.p.Phase = corev1.PodPhase(internBytes(v))
			}
		case statusMessage:
			r.p.Message, err = f.str()
		case statusReason:
			r.p.Reason, err = f.str()
		case statusPodIP:
			r.p.IP, err = f.str()
		case statusConditions:
			err = with(f, r.condition)
		case statusContainerStatuses:
			err = with(f, func(v []byte) error { return appendStatus(&r.p.ContainerStatuses, v) })
		case statusInitContainerStatuses:
			err = with(f, func(v []byte) error { return appendStatus(&r.p.InitContainerStatuses, v) })
		}
		return err
	})
}

func (r *podReader) condition(b []byte) error {
	var c corev1.PodCondition
	if err := eachField(b, func(f field) (err error) {
		var v []byte
		switch f.num {
		// A few types and statuses, the same in every pod.
		case conditionType:
			v, err = f.bytes()
			c.Type = corev1.PodConditionType(internBytes(v))
		case conditionStatus:
			v, err = f.bytes()
			c.Status = corev1.ConditionStatus(internBytes(v))
		case conditionReason:
			c.Reason, err = f.str()
		case conditionMessage:
			c.Message, err = f.str()
		}
		return err
	}); err != nil {
		return err
	}
	r.p.Conditions = append(r.p.Conditions, c)
	return nil
}

// appendStatus reads a ContainerStatus message onto list.
func appendStatus(list *[]corev1.ContainerStatus, b []byte) error {
	var cs corev1.ContainerStatus
	if err := eachField(b, func(f field) (err error) {
		var x uint64
		switch f.num {
		case csName:
			cs.Name, err = f.str()
		case csState:
			err = with(f, func(v []byte) error { return readState(v, &cs.State) })
		case csLastState:
			err = with(f, func(v []byte) error { return readState(v, &cs.LastTerminationState) })
		case csReady:
			x, err = f.varint()
			cs.Ready = x != 0
		case csRestartCount:
			x, err = f.varint()
			cs.RestartCount = int32(x)
		case csStarted:
			x, err = f.varint()
			started := x != 0
			cs.Started = &started
		}
		return err
	}); err != nil {
		return err
	}
	*list = append(*list, cs)
	return nil
}

// readState reads a ContainerState message into st, merging with what an
// earlier one set.
func readState(b []byte, st *corev1.ContainerState) error {
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case stateWaiting:
			if st.Waiting == nil {
				st.Waiting = &corev1.ContainerStateWaiting{}
			}
			err = with(f, func(v []byte) error { return readWaiting(v, st.Waiting) })
		case stateRunning:
			if st.Running == nil {
				st.Running = &corev1.ContainerStateRunning{}
			}
			err = with(f, func(v []byte) error { return readRunning(v, st.Running) })
		case stateTerminated:
			if st.Terminated == nil {
				st.Terminated = &corev1.ContainerStateTerminated{}
			}
			err = with(f, func(v []byte) error { return readTerminated(v, st.Terminated) })
		}
		return err
	})
}

func readWaiting(b []byte, w *corev1.ContainerStateWaiting) error {
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case waitingReason:
			w.Reason, err = f.str()
		case waitingMessage:
			w.Message, err = f.str()
		}
		return err
	})
}

func readRunning(b []byte, r *corev1.ContainerStateRunning) error {
	return eachField(b, func(f field) (err error) {
		if f.num == runningStartedAt {
			err = with(f, func(v []byte) error {
				var err error
				r.StartedAt.Time, err = readTime(v)
				return err
			})
		}
		return err
	})
}

func readTerminated(b []byte, t *corev1.ContainerStateTerminated) error {
	return eachField(b, func(f field) (err error) {
		var x uint64
		switch f.num {
		case termExitCode:
			x, err = f.varint()
			t.ExitCode = int32(x)
		case termSignal:
			x, err = f.varint()
			t.Signal = int32(x)
		case termReason:
			t.Reason, err = f.str()
		case termMessage:
			t.Message, err = f.str()
		case termStartedAt:
			err = with(f, func(v []byte) error {
				var err error
				t.StartedAt.Time, err = readTime(v)
				return err
			})
		case termFinishedAt:
			err = with(f, func(v []byte) error {
				var err error
				t.FinishedAt.Time, err = readTime(v)
				return err
			})
		case termContainerID:
			t.ContainerID, err = f.str()
		}
		return err
	})
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
