package client

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/drover-project/drover/internal/metrics"
)

// TestRequestMetrics sends requests through a real clientset to a stand-in
// API server and finds them counted by method and code on a driver's
// registry.
func TestRequestMetrics(t *testing.T) {
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
	metrics.RegisterKubernetes(r)
	metrics.RegisterKubernetes(prometheus.NewRegistry()) // a second driver of the process
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	// The counters are the process's: compare with what they held.
	before := requestCounts(t, r)
	for range 3 {
		if _, err := cs.CoreV1().Pods("ns").List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.CoreV1().Pods("ns").Delete(t.Context(), "p", metav1.DeleteOptions{}); err == nil {
		t.Fatal("deleting a missing pod succeeded")
	}
	after := requestCounts(t, r)
	got := map[string]uint64{}
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			got[k] = d
		}
	}
	want := map[string]uint64{"requests GET 200": 3, "requests DELETE 404": 1, "latency GET": 3, "latency DELETE": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests counted on the registry (-want +got):\n%s", diff)
	}
}

// requestCounts reads the registry's request counters and latency sample
// counts, keyed "requests METHOD CODE" and "latency METHOD".
func requestCounts(t *testing.T, r *prometheus.Registry) map[string]uint64 {
	t.Helper()
	families, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	counts := map[string]uint64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "drover_kubernetes_api_requests_total":
				counts["requests "+label(m, "method")+" "+label(m, "code")] = uint64(m.GetCounter().GetValue())
			case "drover_kubernetes_api_request_duration_seconds":
				counts["latency "+label(m, "method")] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return counts
}
