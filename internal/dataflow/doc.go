// Package dataflow is the executor side of datasets: the plan a task
// carries (nodes, shuffles, output) and its execution as a chain of
// producers that pass encoded records from sources or shuffle reads,
// through registered typed functions, to a shuffle write or an action's
// result. Narrow transformations are pipelined in one task; only records
// that cross a shuffle or go back to the driver are stored. Typed code is
// instantiated when a function is registered, so the plan itself is plain
// data.
package dataflow
