// Package driver assembles a running driver from its configuration: the
// event bus and its consumers (progress, metrics, web UI, event log), the
// task scheduler, the cluster manager with its backend, the DAG, dynamic
// allocation. Run builds them in one explicit order, each after what it
// needs, hands the application the assembled driver, and stops them in
// the reverse order, so the event stream ends with the executors' removals
// and AppEnd.
//
// The root package (drover.Main, Context, Dataset[T], the actions) is the
// public face over it; nothing here imports it.
package driver
