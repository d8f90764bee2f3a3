package metrics

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-project/drover/internal/objstore"
)

// objstoreRetriesDesc is the object store's retry counter. The counts are
// the process's (objstore.RetryTotals: every Store of the process and the
// executors' reports add to them), read at scrape time, so the store's
// request path records into plain atomics and knows nothing of Prometheus.
var objstoreRetriesDesc = prometheus.NewDesc("drover_objstore_retries_total",
	"Object-store requests retried after a transient error, by reason (throttled, server, connection), by the driver and its executors.",
	[]string{"reason"}, nil)

// objstoreCollector exports the object store's retry counts.
type objstoreCollector struct{}

func (objstoreCollector) metricType() string { return "counter" }

func (objstoreCollector) Describe(ch chan<- *prometheus.Desc) { ch <- objstoreRetriesDesc }

func (objstoreCollector) Collect(ch chan<- prometheus.Metric) {
	totals := objstore.RetryTotals()
	// Sorted so that a scrape's order is stable.
	for _, reason := range slices.Sorted(maps.Keys(totals)) {
		ch <- prometheus.MustNewConstMetric(objstoreRetriesDesc, prometheus.CounterValue, float64(totals[reason]), reason)
	}
}

// RegisterObjstore exports the object store's metrics on r.
func RegisterObjstore(r prometheus.Registerer) {
	registerShared(r, objstoreCollector{})
}
