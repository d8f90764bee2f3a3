package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestKubernetesRequests sends requests through a real clientset to a
// stand-in API server and finds them counted by method and code.
func TestKubernetesRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/ns/pods":
			_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		}
	}))
	defer srv.Close()
	r := prometheus.NewRegistry()
	RegisterKubernetes(r)
	RegisterKubernetes(prometheus.NewRegistry()) // a second driver of the process
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	// The counters are the process's: compare with what they held.
	listed, missing := apiRequests.WithLabelValues("GET", "200"), apiRequests.WithLabelValues("DELETE", "404")
	before := []float64{testutil.ToFloat64(listed), testutil.ToFloat64(missing)}
	getLatency := apiLatency.WithLabelValues("GET").(prometheus.Histogram)
	beforeGets := sampleCount(t, getLatency)
	for range 3 {
		if _, err := cs.CoreV1().Pods("ns").List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.CoreV1().Pods("ns").Delete(t.Context(), "p", metav1.DeleteOptions{}); err == nil {
		t.Fatal("deleting a missing pod succeeded")
	}
	if got := testutil.ToFloat64(listed) - before[0]; got != 3 {
		t.Errorf("GET 200 counted %v times, want 3", got)
	}
	if got := testutil.ToFloat64(missing) - before[1]; got != 1 {
		t.Errorf("DELETE 404 counted %v times, want 1", got)
	}
	if got := sampleCount(t, getLatency) - beforeGets; got != 3 {
		t.Errorf("%d GET latencies observed, want 3", got)
	}
	if n, err := testutil.GatherAndCount(r, "drover_kubernetes_api_requests_total"); err != nil || n < 2 {
		t.Errorf("the registry serves %d request series (%v), want at least 2", n, err)
	}
}

func sampleCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var pb dto.Metric
	if err := h.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetHistogram().GetSampleCount()
}
