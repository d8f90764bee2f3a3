// Package executor is the executor runtime: the application binary in the
// executor role. It registers with the driver over one control stream (rpc/ctl),
// runs the tasks it is sent on its cores, reports their status in batches,
// keeps results too large to travel inline for the driver to fetch, sends
// heartbeats, exits by itself when the driver has been unreachable for
// spark.network.timeout, and on SIGTERM stops taking tasks, finishes the ones
// it runs and leaves.
package executor
