// Package metrics is the driver's Prometheus metrics: a consumer of the
// event stream that keeps Spark's executor metrics (metrics_executor_*,
// spark_info, under Spark's names and labels) and drover's own allocation,
// lifecycle and scheduling metrics; the registry that assembles them with
// the other domains' metrics, which are defined here too, one file each,
// as Kueue keeps its metrics in one package: the Kubernetes client's
// requests (kube.go; internal/k8s/client hooks client-go into them, so this
// package does not import client-go), the object store's retries
// (objstore.go, read from objstore's process-wide counts at scrape time)
// and dynamic allocation's (dynalloc.go: the hooks its manager records
// into); the HTTP handler that serves them; and the reference,
// docs/metrics.md, generated from what is registered.
//
// The consumer runs on the event bus's goroutine for it, so the task path
// of the scheduler never waits for it. It resolves each executor's series
// once, when the executor registers, so a task's start and end cost a map
// lookup and a few atomic adds; an executor's series go when it does, which
// bounds the series to the executors alive.
package metrics
