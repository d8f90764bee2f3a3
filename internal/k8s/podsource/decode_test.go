package podsource

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"

	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// fullPod is an executor pod as the API server shows it, with what the
// driver does not read.
func fullPod(id int, phase corev1.PodPhase, rv string) *corev1.Pod {
	p := execPod(id, "app-1")
	p.ResourceVersion = rv
	p.Annotations = map[string]string{"drover.io/owner": "driver"}
	p.Spec = corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "executor", Image: "drover:1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1408Mi")}}}}}
	p.Status = corev1.PodStatus{Phase: phase, PodIP: "10.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	return p
}

// apiServer answers the source's list and watch calls as kube-apiserver
// does, in mediaType whatever the client accepts, from initial (the
// initial events or list) then events. With refuseWatchList it answers a
// watch list as a server without it does, and the reflector lists.
type apiServer struct {
	t               *testing.T
	mediaType       string
	refuseWatchList bool
	initial         []*corev1.Pod
	events          []watch.Event

	mu      sync.Mutex
	accepts []string
	calls   []string
}

func (a *apiServer) info() runtime.SerializerInfo {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), a.mediaType)
	if !ok {
		a.t.Fatalf("no serializer for %s", a.mediaType)
	}
	return info
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	call := "list"
	if q.Get("watch") == "true" {
		call = "watch"
		if q.Get("sendInitialEvents") == "true" {
			call = "watch list"
		}
	}
	a.mu.Lock()
	a.accepts = append(a.accepts, r.Header.Get("Accept"))
	a.calls = append(a.calls, call)
	a.mu.Unlock()
	if r.URL.Path != "/api/v1/namespaces/"+ns+"/pods" {
		http.NotFound(w, r)
		return
	}
	info := a.info()
	enc := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	w.Header().Set("Content-Type", a.mediaType)
	switch {
	case call == "watch list" && a.refuseWatchList:
		st := apierrors.NewInvalid(schema.GroupKind{Kind: "ListOptions"}, "", nil).Status()
		w.WriteHeader(http.StatusUnprocessableEntity)
		if err := enc.Encode(&st, w); err != nil {
			a.t.Error(err)
		}
	case call == "list":
		l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
		for _, p := range a.initial {
			l.Items = append(l.Items, *p)
		}
		if err := enc.Encode(l, w); err != nil {
			a.t.Error(err)
		}
	default:
		events := a.events
		if call == "watch list" {
			var initial []watch.Event
			for _, p := range a.initial {
				initial = append(initial, watch.Event{Type: watch.Added, Object: p})
			}
			bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10",
				Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
			events = append(append(initial, watch.Event{Type: watch.Bookmark, Object: bookmark}), events...)
		}
		fw := info.StreamSerializer.Framer.NewFrameWriter(w)
		we := restwatch.NewEncoder(streaming.NewEncoder(fw, info.StreamSerializer.Serializer), enc)
		for _, e := range events {
			if err := we.Encode(&e); err != nil {
				a.t.Error(err)
				return
			}
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// TestSourceDecodesTheServersPods: against an API server, the source keeps
// what NewPod makes of each pod, from a watch list or a list, whether the
// server answers in protobuf or (a server that does not speak it) JSON,
// and takes in the watch's later events.
func TestSourceDecodesTheServersPods(t *testing.T) {
	testCases := map[string]struct {
		mediaType       string
		refuseWatchList bool
		calls           []string
	}{
		"protobuf watch list": {runtime.ContentTypeProtobuf, false, []string{"watch list"}},
		"protobuf list":       {runtime.ContentTypeProtobuf, true, []string{"watch list", "list", "watch"}},
		"JSON watch list":     {runtime.ContentTypeJSON, false, []string{"watch list"}},
		"JSON list":           {runtime.ContentTypeJSON, true, []string{"watch list", "list", "watch"}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			initial := []*corev1.Pod{fullPod(1, corev1.PodRunning, "5"), fullPod(2, corev1.PodPending, "6")}
			running2 := fullPod(2, corev1.PodRunning, "11")
			third := fullPod(3, corev1.PodPending, "12")
			a := &apiServer{t: t, mediaType: tc.mediaType, refuseWatchList: tc.refuseWatchList, initial: initial,
				events: []watch.Event{{Type: watch.Modified, Object: running2}, {Type: watch.Added, Object: third},
					{Type: watch.Deleted, Object: fullPod(1, corev1.PodRunning, "13")}}}
			srv := httptest.NewServer(a)
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			lw, err := NewREST(cs, ns)
			if err != nil {
				t.Fatal(err)
			}
			src := New(lw, Options{Selector: selector, Logger: slog.New(slog.DiscardHandler)})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { src.Run(ctx); close(done) }()
			t.Cleanup(func() {
				cancel()
				<-done
				srv.Close()
				cs.CoreV1().RESTClient().(*rest.RESTClient).Client.CloseIdleConnections()
			})

			h := &harness{t: t, src: src}
			want := snapshot.NewPods(running2, third)
			pods, _ := h.waitTake(func(pods []*snapshot.Pod) bool {
				return slices.Equal(names(pods), []string{"app-1-exec-2", "app-1-exec-3"}) && pods[0].ResourceVersion != "6" &&
					pods[1].ResourceVersion != "6"
			})
			slices.SortFunc(pods, func(x, y *snapshot.Pod) int { return strings.Compare(x.Name, y.Name) })
			if diff := cmp.Diff(want, pods); diff != "" {
				t.Errorf("pods after the events (-NewPod +source):\n%s", diff)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if diff := cmp.Diff(tc.calls, a.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			for _, accept := range a.accepts {
				if !strings.HasPrefix(accept, runtime.ContentTypeProtobuf) {
					t.Errorf("the source asked for %q, not protobuf first", accept)
				}
			}
		})
	}
}

// TestPodDecoder: the decoder reads a pod, a pod list and a bookmark in
// protobuf or JSON into what NewPod makes of them, with the metadata the
// reflector reads, and leaves other kinds to the standard decoder.
func TestPodDecoder(t *testing.T) {
	pod := fullPod(1, corev1.PodRunning, "5")
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	remaining := int64(3)
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next", RemainingItemCount: &remaining},
		Items: []corev1.Pod{*pod, *fullPod(2, corev1.PodPending, "6")}}
	object := func(p *corev1.Pod) *podObject {
		o := &podObject{pod: snapshot.NewPod(p)}
		o.Name, o.Namespace, o.ResourceVersion = p.Name, p.Namespace, p.ResourceVersion
		if len(p.Annotations[metav1.InitialEventsAnnotationKey]) > 0 {
			o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
		}
		return o
	}
	status := &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: 404}
	for _, mediaType := range []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON} {
		info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
		if !ok {
			t.Fatal(mediaType)
		}
		enc := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
		d := newPodSerializer().DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion)
		for name, tc := range map[string]struct {
			in   runtime.Object
			want runtime.Object
		}{
			"pod":      {pod, object(pod)},
			"bookmark": {bookmark, object(bookmark)},
			"list": {list, &podList{ListMeta: list.ListMeta,
				Items: []*podObject{object(&list.Items[0]), object(&list.Items[1])}}},
			"status": {status, status},
		} {
			t.Run(mediaType+" "+name, func(t *testing.T) {
				b, err := runtime.Encode(enc, tc.in)
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := d.Decode(b, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if s, ok := got.(*metav1.Status); ok {
					s.TypeMeta = metav1.TypeMeta{}
				}
				opts := cmp.Options{cmp.AllowUnexported(podObject{}), cmp.FilterPath(func(p cmp.Path) bool {
					return p.Last().String() == ".TypeMeta"
				}, cmp.Ignore())}
				if diff := cmp.Diff(tc.want, got, opts); diff != "" {
					t.Errorf("decoded (-want +got):\n%s", diff)
				}
			})
		}
	}
	if _, _, err := (podDecoder{scheme.Codecs.UniversalDeserializer()}).Decode([]byte("k8s\x00\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x02\x0a\xff"), nil, nil); err == nil {
		t.Error("decoded a truncated pod")
	}
}

// BenchmarkWatchList: the source's first sync from a watch list of 1,000
// running executor pods with three managers' fields, in protobuf, through
// the clientset's typed client (the standard decoder, then NewPod) or the
// source's own REST client (DecodePod). The driver watched about five
// events a pod while 5,000 executors started.
func BenchmarkWatchList(b *testing.B) {
	const n = 1000
	a := &apiServer{t: &testing.T{}, mediaType: runtime.ContentTypeProtobuf}
	for i := range n {
		p := fullPod(i+1, corev1.PodRunning, fmt.Sprint(100+i))
		ts := metav1.Now()
		for _, m := range []string{"drover", "kube-scheduler", "kwok"} {
			p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(strings.Repeat(`{"f:status":{"f:conditions":{}}}`, 20))})
		}
		a.initial = append(a.initial, p)
	}
	// The server's answer, encoded once: its encoding is not the driver's.
	ctx, cancel := context.WithCancel(b.Context())
	cancel()
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods?watch=true&sendInitialEvents=true", nil))
	stream := rec.Body.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		if _, err := w.Write(stream); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	for _, typed := range []bool{true, false} {
		name := "DecodePod"
		if typed {
			name = "typed"
		}
		b.Run(name, func(b *testing.B) {
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.CoreV1().RESTClient().(*rest.RESTClient).Client.CloseIdleConnections()
			b.ReportAllocs()
			for b.Loop() {
				var pods Pods = typedPods{cs: cs, ns: ns}
				if !typed {
					if pods, err = NewREST(cs, ns); err != nil {
						b.Fatal(err)
					}
				}
				src := New(pods, Options{Selector: selector})
				ctx, cancel := context.WithCancel(b.Context())
				done := make(chan struct{})
				go func() { src.Run(ctx); close(done) }()
				if err := src.WaitSynced(ctx); err != nil {
					b.Fatal(err)
				}
				cancel()
				<-done
				if src.Len() != n {
					b.Fatalf("%d pods, want %d", src.Len(), n)
				}
			}
		})
	}
}

// TestWatchEvents: the protobuf watch stream's events read as the
// standard serializer reads them, for each event type.
func TestWatchEvents(t *testing.T) {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	std := info.StreamSerializer.Serializer
	pod, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), fullPod(1, corev1.PodRunning, "5"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error, "ODD"} {
		for name, raw := range map[string][]byte{"pod": pod, "empty": {}} {
			t.Run(string(typ)+" "+name, func(t *testing.T) {
				b, err := runtime.Encode(std, &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}})
				if err != nil {
					t.Fatal(err)
				}
				var want, got metav1.WatchEvent
				if _, _, err := std.Decode(b, nil, &want); err != nil {
					t.Fatal(err)
				}
				out, _, err := watchEvents{std}.Decode(b, nil, &got)
				if err != nil || out != &got {
					t.Fatalf("Decode = %v, %v; want the event", out, err)
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("event (-standard +watchEvents):\n%s", diff)
				}
				// The object, the event's last field, is not copied.
				if len(raw) > 0 && &got.Object.Raw[0] != &b[len(b)-len(raw)] {
					t.Error("the event's object was copied out of the frame")
				}
			})
		}
	}
}
