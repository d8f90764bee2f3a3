package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-project/drover/internal/dynalloc"
)

// NewDynalloc registers dynamic allocation's metrics on r and returns the
// hooks its manager records into.
func NewDynalloc(r prometheus.Registerer) *dynalloc.Metrics {
	target := prometheus.NewGauge(prometheus.GaugeOpts{Name: "drover_dynalloc_target_executors",
		Help: "Number of executors dynamic allocation asks for."})
	changes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drover_dynalloc_target_changes_total",
		Help: "Changes of the executor target, by direction."}, []string{"direction"})
	removed := prometheus.NewCounter(prometheus.CounterOpts{Name: "drover_dynalloc_idle_executors_removed_total",
		Help: "Executors removed because they were idle."})
	r.MustRegister(target, changes, removed)
	return &dynalloc.Metrics{
		SetTarget: func(n int) { target.Set(float64(n)) },
		// A direction's series appears with its first change, as a
		// scrape showed before the hooks.
		TargetChanged: func(direction string) { changes.WithLabelValues(direction).Inc() },
		IdleRemoved:   removed.Inc,
	}
}
