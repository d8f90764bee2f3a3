package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The Kubernetes client's metrics are process-wide: client-go takes its
// metric hooks once per process (internal/k8s/client sets them to record
// into KubeRequests), and every client of the process (the driver's, drover
// submit's) reports to them. RegisterKubernetes exports them on a registry.
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
)

// RegisterKubernetes exports the Kubernetes client's request metrics on r.
func RegisterKubernetes(r prometheus.Registerer) {
	for _, c := range []prometheus.Collector{apiRequests, apiLatency, apiThrottled, apiServer, apiFailovers} {
		registerShared(r, c)
	}
}

// KubeRequests records the Kubernetes client's requests into the
// process's collectors. This package does not import client-go: the
// adapter from client-go's hooks is internal/k8s/client's.
type KubeRequests struct{}

// Result counts a request by HTTP method and status code.
func (KubeRequests) Result(method, code string) { apiRequests.WithLabelValues(method, code).Inc() }

// Latency observes how long a request took to answer.
func (KubeRequests) Latency(method string, d time.Duration) {
	apiLatency.WithLabelValues(method).Observe(d.Seconds())
}

// Throttled observes how long a request waited for the client's rate
// limiter.
func (KubeRequests) Throttled(method string, d time.Duration) {
	apiThrottled.WithLabelValues(method).Observe(d.Seconds())
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

// The API servers of a client with several (spark.kubernetes.apiserver.host).
var (
	apiServer = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drover_kubernetes_api_server",
		Help: "1 for the Kubernetes API server this process's requests go to, 0 for the other listed ones " +
			"(only with several API servers)."}, []string{"endpoint"})
	apiFailovers = prometheus.NewCounter(prometheus.CounterOpts{Name: "drover_kubernetes_api_failovers_total",
		Help: "Times this process's requests left a failed Kubernetes API server for the next listed one."})
)

// KubeAPIServer records that requests go to current of endpoints.
func KubeAPIServer(endpoints []string, current string) {
	for _, e := range endpoints {
		v := 0.0
		if e == current {
			v = 1
		}
		apiServer.WithLabelValues(e).Set(v)
	}
}

// KubeAPIFailover counts requests leaving a failed API server.
func KubeAPIFailover() { apiFailovers.Inc() }
