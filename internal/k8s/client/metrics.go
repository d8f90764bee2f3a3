package client

import (
	"context"
	"net/url"
	"time"

	clientmetrics "k8s.io/client-go/tools/metrics"

	"github.com/drover-project/drover/internal/metrics"
)

// Recorder is what the client's request hooks record into: the process's
// collectors in internal/metrics (metrics.KubeRequests), which a driver's
// registry exports (metrics.RegisterKubernetes).
type Recorder interface {
	Result(method, code string)
	Latency(method string, d time.Duration)
	Throttled(method string, d time.Duration)
}

// client-go takes its metric hooks once per process, from the first call
// of its Register; set at initialisation, as Kubernetes' own components do
// (component-base's restclient metrics), they count every request of the
// process whichever client makes it.
func init() { registerMetrics(metrics.KubeRequests{}) }

func registerMetrics(r Recorder) {
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestResult:      requestResult{r},
		RequestLatency:     latency(r.Latency),
		RateLimiterLatency: latency(r.Throttled),
	})
}

type requestResult struct{ r Recorder }

func (rr requestResult) Increment(_ context.Context, code, method, _ string) {
	rr.r.Result(method, code)
}

type latency func(method string, d time.Duration)

func (l latency) Observe(_ context.Context, verb string, _ url.URL, d time.Duration) { l(verb, d) }
