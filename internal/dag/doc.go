// Package dag runs jobs on datasets: it cuts the graph of datasets into
// stages at shuffle boundaries, runs parent stages first (independent ones
// concurrently), tracks where each map output lives, and recovers from
// lost map outputs by recomputing just those before retrying the stage's
// missing partitions — Spark's DAGScheduler and MapOutputTracker in one.
package dag
