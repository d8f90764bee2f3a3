package metrics

import (
	"net/http"
	"reflect"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/drover-project/drover/internal/dynalloc"
)

// Paths the driver serves its metrics at, on the UI port: Path, and Spark's
// path for its executor metrics, so tooling set up for Spark finds them.
const (
	Path               = "/metrics"
	SparkExecutorsPath = "/metrics/executors/prometheus"
)

// Handler serves what g gathers in Prometheus' text format. A collector
// that fails costs its own series, not the scrape.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Registry is a Prometheus registry that remembers the collectors
// registered on it, so that what it serves can be documented (Docs).
type Registry struct {
	*prometheus.Registry
	mu         sync.Mutex
	collectors []prometheus.Collector
}

// NewRegistry returns a registry with the Go runtime's and the process's
// collectors (go_*, process_*), which the documentation names but does not
// list: they are the Prometheus Go client's and vary with the Go version.
func NewRegistry() *Registry {
	r := &Registry{Registry: prometheus.NewRegistry()}
	r.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Register registers c and remembers it.
func (r *Registry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	r.collectors = append(r.collectors, c)
	r.mu.Unlock()
	return nil
}

// MustRegister registers cs and panics on the first that fails.
func (r *Registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister unregisters c and forgets it.
func (r *Registry) Unregister(c prometheus.Collector) bool {
	if !r.Registry.Unregister(c) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, k := range r.collectors {
		if reflect.TypeOf(k) == reflect.TypeOf(c) && reflect.ValueOf(k).Comparable() && k == c {
			r.collectors = append(r.collectors[:i], r.collectors[i+1:]...)
			break
		}
	}
	return true
}

// Driver is the driver's metrics, registered on one registry.
type Driver struct {
	Registry *Registry
	// Events is the event-stream consumer to subscribe.
	Events *Metrics
	// Dynalloc is dynamic allocation's, when it is enabled.
	Dynalloc *dynalloc.Metrics
	// Restart counts the driver's restarts in its pod and what its
	// attempt adopted from the earlier ones.
	Restart *Restart
}

// NewDriver registers everything a driver exports: the event stream's
// metrics, the driver's restarts, the Kubernetes client's, the object
// store's and, with dynamicAllocation, dynamic allocation's.
// docs/metrics.md is generated from it.
func NewDriver(o Options, dynamicAllocation bool) *Driver {
	r := NewRegistry()
	d := &Driver{Registry: r, Events: New(r, o), Restart: NewRestart(r)}
	RegisterKubernetes(r)
	RegisterObjstore(r)
	if dynamicAllocation {
		d.Dynalloc = NewDynalloc(r)
	}
	return d
}
