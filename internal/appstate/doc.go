// Package appstate folds the driver's event stream into what the web UI and
// the REST API show: the application, its jobs, stages and tasks, its
// executors, the Kubernetes allocator's rounds and dynamic allocation's
// targets, and the redacted configuration. It is Spark's AppStatusListener
// and AppStatusStore in one.
//
// A Store is purely event-driven: a live driver subscribes Store.Handle to
// its bus, and a history server calls Handle for each event read back from
// an event log, then serves the same pages. Memory stays bounded as in
// Spark: finished jobs, stages, tasks and dead executors beyond the
// spark.ui.retained* settings are forgotten, oldest first, while the
// counts and totals they contributed to stay. Reads return copies taken
// under a lock, so pages can be rendered while events keep coming.
package appstate
