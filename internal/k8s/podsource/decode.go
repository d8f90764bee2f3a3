package podsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// podObject is a listed or watched pod as the source decodes it: the
// driver's Pod, with the metadata the reflector reads (name and namespace
// for its keys, resource version, a bookmark's initial-events annotation).
type podObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	pod *snapshot.Pod
}

func (o *podObject) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// podList is a pod list of podObjects.
type podList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []*podObject
}

func (l *podList) DeepCopyObject() runtime.Object {
	c := *l
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	c.Items = make([]*podObject, len(l.Items))
	for i, o := range l.Items {
		c.Items[i] = o.DeepCopyObject().(*podObject)
	}
	return &c
}

// objectOf is the podObject of a pod the standard decoder read.
func objectOf(p *corev1.Pod) *podObject {
	o := &podObject{pod: snapshot.NewPod(p)}
	o.Name, o.Namespace, o.ResourceVersion = p.Name, p.Namespace, p.ResourceVersion
	if v, ok := p.Annotations[metav1.InitialEventsAnnotationKey]; ok {
		o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: v}
	}
	return o
}

// decodedObject is the podObject of a pod DecodePod read.
func decodedObject(b []byte) (*podObject, error) {
	var m snapshot.Meta
	p, err := snapshot.DecodePod(b, &m)
	if err != nil {
		return nil, err
	}
	o := &podObject{pod: p}
	o.Name, o.Namespace, o.ResourceVersion = p.Name, m.Namespace, p.ResourceVersion
	if m.InitialEventsEnd {
		o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return o, nil
}

// podDecoder decodes pods and pod lists into podObjects: protobuf ones
// with snapshot.DecodePod, without decoding what the driver does not read
// (at 5,000 executors the watch's standard decoding, 25,000 full pods with
// their managed fields, was an eighth of the driver's CPU until all were
// registered), others (JSON from a server that does not answer in
// protobuf) with next, the standard decoder, then snapshot.NewPod. Other
// kinds (a Status) are next's.
type podDecoder struct{ next runtime.Decoder }

// protobufMagic starts Kubernetes' protobuf encoding of an object, which
// then is a runtime.Unknown message.
var protobufMagic = []byte("k8s\x00")

func (d podDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if raw, gvk, ok := unknown(data); ok {
		if gvk.GroupVersion() == corev1.SchemeGroupVersion {
			switch gvk.Kind {
			case "Pod":
				o, err := decodedObject(raw)
				return o, &gvk, err
			case "PodList":
				l, err := decodeList(raw)
				return l, &gvk, err
			}
		}
		// A watch event's object is still in watchEvents' frame, which
		// the standard decoder's answer (a runtime.Unknown) may hold.
		data = bytes.Clone(data)
	}
	obj, gvk, err := d.next.Decode(data, defaults, into)
	if err != nil {
		return nil, gvk, err
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return objectOf(o), gvk, nil
	case *corev1.PodList:
		l := &podList{ListMeta: o.ListMeta, Items: make([]*podObject, len(o.Items))}
		for i := range o.Items {
			l.Items[i] = objectOf(&o.Items[i])
		}
		return l, gvk, nil
	}
	return obj, gvk, nil
}

// Field numbers of runtime.Unknown, its TypeMeta, and PodList with its
// ListMeta.
const (
	unknownTypeMeta, unknownRaw, unknownContentEncoding = 1, 2, 3
	typeAPIVersion, typeKind                            = 1, 2
	listMetadata, listItems                             = 1, 2
	listResourceVersion, listContinue, listRemaining    = 2, 3, 4
)

// unknown reads the protobuf envelope of an object: its group, version and
// kind, and its message. It is not ok for anything else, which the
// standard decoder then reads or rejects.
func unknown(data []byte) (raw []byte, gvk schema.GroupVersionKind, ok bool) {
	b, found := bytes.CutPrefix(data, protobufMagic)
	if !found {
		return nil, gvk, false
	}
	var apiVersion string
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == unknownTypeMeta && typ == protowire.BytesType:
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				switch {
				case num == typeAPIVersion && typ == protowire.BytesType:
					apiVersion = string(v)
				case num == typeKind && typ == protowire.BytesType:
					gvk.Kind = string(v)
				}
				return nil
			})
		case num == unknownRaw && typ == protowire.BytesType:
			raw = v
		case num == unknownContentEncoding && len(v) > 0:
			return fmt.Errorf("content encoding %q", v)
		}
		return nil
	})
	if err != nil {
		return nil, gvk, false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, gvk, false
	}
	return raw, gv.WithKind(gvk.Kind), true
}

// decodeList reads a PodList message.
func decodeList(b []byte) (*podList, error) {
	l := &podList{}
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case listMetadata:
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
				switch {
				case num == listResourceVersion && typ == protowire.BytesType:
					l.ResourceVersion = string(v)
				case num == listContinue && typ == protowire.BytesType:
					l.Continue = string(v)
				case num == listRemaining && typ == protowire.VarintType:
					n := int64(x)
					l.RemainingItemCount = &n
				}
				return nil
			})
		case listItems:
			o, err := decodedObject(v)
			if err != nil {
				return err
			}
			l.Items = append(l.Items, o)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decoding a pod list: %w", err)
	}
	return l, nil
}

// fields calls f with each field of the message b: v is a length-delimited
// field's value, x a varint's.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// podSerializer is the clientset's serializers with podDecoder over each
// decoder, and watchEvents reading protobuf watch streams.
type podSerializer struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func newPodSerializer() podSerializer {
	base := scheme.Codecs.WithoutConversion()
	infos := slices.Clone(base.SupportedMediaTypes())
	for i, info := range infos {
		if info.MediaType == runtime.ContentTypeProtobuf && info.StreamSerializer != nil {
			ss := *info.StreamSerializer
			ss.Serializer = watchEvents{ss.Serializer}
			infos[i].StreamSerializer = &ss
		}
	}
	return podSerializer{NegotiatedSerializer: base, infos: infos}
}

func (s podSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.infos }

func (s podSerializer) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return podDecoder{next: s.NegotiatedSerializer.DecoderToVersion(d, gv)}
}

// watchEvents reads a protobuf watch stream's events as its standard
// serializer does, except that an event's object stays in the frame
// instead of being copied (a pod's few kilobytes, each event): client-go's
// watch decoder decodes it, with podDecoder, which keeps none of it,
// before it reads the next frame. Whatever else, or an event it does not
// expect, is the standard serializer's.
type watchEvents struct{ runtime.Serializer }

// Field numbers of meta/v1 WatchEvent and runtime.RawExtension.
const (
	eventType, eventObject = 1, 2
	rawExtensionRaw        = 1
)

func (s watchEvents) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	e, ok := into.(*metav1.WatchEvent)
	if !ok {
		return s.Serializer.Decode(data, defaults, into)
	}
	var typ, raw []byte
	err := fields(data, func(num protowire.Number, wt protowire.Type, v []byte, _ uint64) error {
		if wt != protowire.BytesType {
			return errUnexpected
		}
		switch num {
		case eventType:
			typ = v
		case eventObject:
			return fields(v, func(num protowire.Number, wt protowire.Type, v []byte, _ uint64) error {
				if num == rawExtensionRaw {
					if wt != protowire.BytesType {
						return errUnexpected
					}
					raw = v
				}
				return nil
			})
		}
		return nil
	})
	if err != nil || raw == nil {
		return s.Serializer.Decode(data, defaults, into)
	}
	*e = metav1.WatchEvent{Type: eventTypeName(typ), Object: runtime.RawExtension{Raw: raw}}
	return e, nil, nil
}

// errUnexpected is a field watchEvents leaves to the standard serializer.
var errUnexpected = errors.New("unexpected field")

// eventTypeName is the event type typ, without a copy for the known ones.
func eventTypeName(typ []byte) string {
	for _, t := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		if string(typ) == string(t) {
			return string(t)
		}
	}
	return string(typ)
}

// restPods is the production Pods: it lists and watches the pods in ns
// with c, asking for protobuf and decoding the pods with podDecoder.
type restPods struct {
	c  *rest.RESTClient
	ns string
}

// NewREST is the Pods that lists and watches the pods in ns through a REST
// client for core/v1 like cs's, on the same HTTP client, rate limiter and
// server, that asks for protobuf and decodes pods with podDecoder into
// snapshot.Pods. cs must talk to an API server: a fake clientset has no
// REST client (its tests pass a Pods of their own to New).
func NewREST(cs kubernetes.Interface, ns string) (Pods, error) {
	rc, ok := cs.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		return nil, fmt.Errorf("watching executor pods: the clientset (%T) has no REST client for core/v1", cs)
	}
	// The core client's URL without a resource: server and /api/v1.
	base := rc.Get().URL()
	c, err := rest.NewRESTClient(base, "", rest.ClientContentConfig{
		AcceptContentTypes: runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON,
		ContentType:        runtime.ContentTypeProtobuf,
		GroupVersion:       corev1.SchemeGroupVersion,
		Negotiator:         runtime.NewClientNegotiator(newPodSerializer(), corev1.SchemeGroupVersion),
	}, rc.GetRateLimiter(), rc.Client)
	if err != nil {
		return nil, fmt.Errorf("watching executor pods: %w", err)
	}
	return &restPods{c: c, ns: ns}, nil
}

func (p *restPods) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return listPods(ctx, p.c, p.ns, o)
}

func (p *restPods) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return watchPods(ctx, p.c, p.ns, o)
}

// listPods and watchPods list and watch the pods in ns with c, as the
// typed client does.
func listPods(ctx context.Context, c *rest.RESTClient, ns string, o metav1.ListOptions) (runtime.Object, error) {
	return c.Get().Namespace(ns).Resource("pods").VersionedParams(&o, scheme.ParameterCodec).
		Timeout(timeout(o)).Do(ctx).Get()
}

func watchPods(ctx context.Context, c *rest.RESTClient, ns string, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return c.Get().Namespace(ns).Resource("pods").VersionedParams(&o, scheme.ParameterCodec).
		Timeout(timeout(o)).Watch(ctx)
}

// timeout is the options' timeout, none when they have none.
func timeout(o metav1.ListOptions) time.Duration {
	if o.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*o.TimeoutSeconds) * time.Second
}
