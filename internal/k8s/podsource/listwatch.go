package podsource

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// Pods lists and watches the application's pods in its namespace, with
// the options the source's reflector gives (the application's selector
// added): NewREST's in production. The objects are what the source keeps:
// NewREST's decoded pods, or *corev1.Pod and *corev1.PodList (a test's
// over a fake clientset's typed client). A Pods whose server cannot stream
// its initial list (WatchList) says so with IsWatchListSemanticsUnSupported
// (see watchlist.DoesClientNotSupportWatchListSemantics).
type Pods interface {
	List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// listWatch lists and watches the application's pods, recording the health
// of each call.
type listWatch struct{ s *Source }

var (
	_ cache.ListerWatcher            = (*listWatch)(nil)
	_ cache.ListerWatcherWithContext = (*listWatch)(nil)
)

func (l *listWatch) options(o metav1.ListOptions) metav1.ListOptions {
	o.LabelSelector = l.s.o.Selector.String()
	return o
}

func (l *listWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	list, err := l.s.client.List(ctx, l.options(o))
	if err != nil {
		l.s.failed(err)
		return nil, err
	}
	l.s.succeeded()
	return list, nil
}

func (l *listWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.s.client.Watch(ctx, l.watchOptions(o))
	if err != nil {
		l.s.failed(err)
		return nil, err
	}
	l.s.succeeded()
	return w, nil
}

// watchOptions are the reflector's watch options for this source. Its
// first streamed list (WatchList) asks for a consistent read, resource
// version "": the API server sends the closing bookmark only once its pod
// cache has caught up with etcd's newest revision, and when the newest
// write is no pod (the executor config map and Secret the driver creates
// at the same moment, a lease), the cache learns it from etcd's progress
// notifications, which kube-apiserver requests every 100 ms: the driver's
// first sync took 18–32 ms of a small submission's start. Until the first
// sync it asks for resource version "0" instead, the cache as it is, as the
// reflector's first list has always done without WatchList: the watch then
// goes on from the cache's revision, so a pod the cache had not seen yet
// arrives as an event. The application's pods are its driver's, created
// after this sync. Later streams (after a watch expired) keep the
// reflector's choice.
func (l *listWatch) watchOptions(o metav1.ListOptions) metav1.ListOptions {
	o = l.options(o)
	if o.SendInitialEvents != nil && *o.SendInitialEvents && o.ResourceVersion == "" && !l.s.hasSynced() {
		o.ResourceVersion = "0"
	}
	return o
}

// hasSynced reports whether the first list completed.
func (s *Source) hasSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.didSync
}

// IsWatchListSemanticsUnSupported lets the reflector stream its initial
// list (WatchList) unless the source's Pods says it cannot (a test's over
// a fake clientset); NewREST's always can.
func (l *listWatch) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(l.s.client)
}

func (l *listWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

func (l *listWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}
