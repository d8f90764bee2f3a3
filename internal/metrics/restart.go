package metrics

import "github.com/prometheus/client_golang/prometheus"

// Restart is the metrics of a driver that restarts in its pod
// (spark.kubernetes.driver.restartPolicy=OnFailure): each restart is a new
// attempt of the application, which adopts the executors and the shuffle
// outputs the earlier attempts left. Every driver has them, at 0 when it
// never restarted or cannot. Its methods may be called on nil (a driver
// without metrics) and from any goroutine.
type Restart struct {
	restarts prometheus.Gauge
	adopted  prometheus.Counter
	skipped  prometheus.Counter
}

// NewRestart registers the driver restart metrics on r.
func NewRestart(r prometheus.Registerer) *Restart {
	m := &Restart{
		restarts: prometheus.NewGauge(prometheus.GaugeOpts{Name: "drover_driver_restarts",
			Help: "Times the driver was restarted in its pod before this attempt (spark.kubernetes.driver.restartPolicy=OnFailure): " +
				"the attempt's container restart count, 0 for the first attempt."}),
		adopted: prometheus.NewCounter(prometheus.CounterOpts{Name: "drover_executors_adopted_total",
			Help: "Executors this driver attempt adopted from an earlier attempt instead of creating them."}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{Name: "drover_stages_skipped_total",
			Help: "Shuffle map stages this driver attempt did not run because live executors still held all their outputs " +
				"from an earlier attempt."}),
	}
	r.MustRegister(m.restarts, m.adopted, m.skipped)
	return m
}

// SetRestarts sets the restarts before this attempt: its container's
// restart count (attempt n has n-1).
func (m *Restart) SetRestarts(n int) {
	if m != nil {
		m.restarts.Set(float64(n))
	}
}

// ExecutorsAdopted counts n more executors adopted from an earlier
// attempt.
func (m *Restart) ExecutorsAdopted(n int) {
	if m != nil && n > 0 {
		m.adopted.Add(float64(n))
	}
}

// StagesSkipped counts n more stages skipped because their shuffle
// outputs were adopted.
func (m *Restart) StagesSkipped(n int) {
	if m != nil && n > 0 {
		m.skipped.Add(float64(n))
	}
}
