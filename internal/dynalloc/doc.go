// Package dynalloc is dynamic executor allocation with Spark's semantics
// (spark.dynamicAllocation.*): the target grows while tasks wait (+1 after
// schedulerBacklogTimeout, then doubling steps every
// sustainedSchedulerBacklogTimeout), follows the need down when it shrinks,
// and executors idle for executorIdleTimeout are removed unless they hold
// shuffle data a running job needs. The policy is a pure function of its
// state and the application's state at one instant; Manager is the thin
// loop that feeds it every 100 ms and carries out its decisions.
package dynalloc
