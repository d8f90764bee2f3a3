// Package shuffle moves records between the map and reduce sides of a stage
// boundary: map output files on executor-local disk, the block service that
// serves them, the reduce-side fetcher, and the external sorter the reduce
// side aggregates, groups, joins and sorts with.
//
// Map output. A map task attempt writes one data file and one index file.
// Records go to per-partition in-memory buffers; when the buffers together
// pass a budget, every non-empty buffer is appended to the data file as a
// segment and the buffers are reused. A reduce partition's block is the
// concatenation of its segments, listed by the index. This is the cheapest
// design that keeps a map task's memory bounded by one budget regardless of
// the number of partitions, writes strictly sequentially, and needs neither a
// sort by partition nor a merge of per-partition files (Spark's
// bypass-merge writer opens one file per partition; its sort writer sorts).
// Outputs are committed by renaming temp files, so a reader never sees a
// partial output and an aborted or killed attempt leaves nothing a reducer
// could fetch.
//
// Fetching. A reducer reads its blocks on the same executor straight from
// disk and streams the others over gRPC (Executor.FetchBlocks), grouping the
// blocks of one executor into requests of at most a fifth of the in-flight
// budget so that several executors are read at once. Bytes fetched but not yet
// consumed never exceed the budget (spark.reducer.maxSizeInFlight): a request
// starts only when its blocks' sizes fit in what the consumer has released, so
// a fast network cannot outrun a slow reducer into running out of memory. A
// block larger than the whole budget is still fetched, alone. Any failure to
// obtain a block is a *FetchFailedError naming the map output and the
// executor, which the DAG scheduler turns into a resubmission of the map stage.
// Connections to other executors, one per peer, are cached up to
// drover.shuffle.maxPeerConnections: unused ones are closed least recently
// used first when a new peer needs room, or after spark.network.timeout
// unused; one in use is never closed under its fetch, and a fetch that finds
// all in use waits for a release. An executor of a job with thousands of
// executors thus holds a bounded number of sockets, not one per executor.
//
// Sorting. The Sorter buffers records up to a memory budget, then sorts them
// by key and spills them to a run file. Groups merges the runs with a heap and
// hands each distinct key's values to the caller as an iterator that reads
// them from the runs as it goes, so a skewed key with more values than the
// memory budget is aggregated by streaming rather than by collecting it.
//
// Record framing in blocks and runs is uvarint(len(key)) key uvarint(len(value))
// value, repeated.
package shuffle
