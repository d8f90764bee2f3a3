package podsource

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/watchlist"
)

// typedPods is a test's Pods over a clientset's typed client, for a fake
// clientset, which has no REST client for NewREST: it lists and watches
// *corev1.Pods decoded by the standard decoder, and streams its initial
// list (WatchList) only when the clientset can (a fake cannot).
type typedPods struct {
	cs kubernetes.Interface
	ns string
}

var _ Pods = typedPods{}

func (p typedPods) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l, err := p.cs.CoreV1().Pods(p.ns).List(ctx, o)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (p typedPods) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return p.cs.CoreV1().Pods(p.ns).Watch(ctx, o)
}

func (p typedPods) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(p.cs)
}

// TestNewRESTNeedsAServer: a fake clientset has no REST client, so the
// production Pods cannot be built over it (its tests pass typedPods), and
// the one built over a real clientset streams its initial list.
func TestNewRESTNeedsAServer(t *testing.T) {
	if _, err := NewREST(fake.NewClientset(), ns); err == nil {
		t.Error("NewREST built a Pods over a fake clientset")
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := NewREST(cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	if watchlist.DoesClientNotSupportWatchListSemantics(pods) || (&listWatch{New(pods, Options{})}).IsWatchListSemanticsUnSupported() {
		t.Error("NewREST's Pods does not stream its initial list")
	}
}
