// Package events is the driver's event stream, Spark's LiveListenerBus
// idea: the scheduler, the DAG, the backend, the allocator, the lifecycle
// manager and dynamic allocation publish typed events; the console
// progress, the UI's state store, the metrics and the event log consume
// them.
//
// Publishing never blocks. The consumers share one queue, each with its own
// place, bound and goroutine; a consumer that falls behind loses its oldest
// events, which are counted, instead of slowing the scheduler. Events are plain values: a consumer
// must not modify one, since every consumer sees the same value.
package events
