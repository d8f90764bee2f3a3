package metrics

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// The Kubernetes client's metrics are process-wide: client-go takes its
// metric hooks once per process, and every client of the process (the
// driver's, drover submit's) reports to them. RegisterKubernetes exports
// them on a registry.
var (
	apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drover_kubernetes_api_requests_total",
		Help: "Kubernetes API requests of this process, by HTTP method and status code " +
			"(\"<error>\" when no response came)."}, []string{"method", "code"})
	apiLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "drover_kubernetes_api_request_duration_seconds",
		Help:    "Time Kubernetes API requests of this process took to answer, by HTTP method (a watch: until its response began).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"method"})
	apiThrottled = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "drover_kubernetes_api_client_throttle_seconds",
		Help:    "Time Kubernetes API requests of this process waited for the client's rate limiter (QPS, burst), by HTTP method.",
		Buckets: []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"method"})

	hookOnce sync.Once
)

// RegisterKubernetes hooks the Kubernetes client's request metrics (once
// per process) and exports them on r.
func RegisterKubernetes(r prometheus.Registerer) {
	hookOnce.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestResult:      requestResult{},
			RequestLatency:     latency{apiLatency},
			RateLimiterLatency: latency{apiThrottled},
		})
	})
	for _, c := range []prometheus.Collector{apiRequests, apiLatency, apiThrottled} {
		registerShared(r, c)
	}
}

// registerShared registers a process-wide collector, which every driver
// run of the process (tests run many) registers on its own registry.
func registerShared(r prometheus.Registerer, c prometheus.Collector) {
	if err := r.Register(c); err != nil {
		if _, dup := errors.AsType[prometheus.AlreadyRegisteredError](err); !dup {
			panic(err)
		}
	}
}

type requestResult struct{}

func (requestResult) Increment(_ context.Context, code, method, _ string) {
	apiRequests.WithLabelValues(method, code).Inc()
}

type latency struct{ h *prometheus.HistogramVec }

func (l latency) Observe(_ context.Context, verb string, _ url.URL, d time.Duration) {
	l.h.WithLabelValues(verb).Observe(d.Seconds())
}
