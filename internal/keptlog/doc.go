// Package keptlog keeps the logs of an application's processes (the driver
// and every executor, every attempt) after their pods are gone (issue 41),
// and reads them back for drover logs, the web UI and the history server.
//
// # Writing
//
// A process puts a Writer under its log output. Write appends to a buffer
// under a mutex and returns: it never waits on the store and never fails. A
// goroutine cuts the buffer into a chunk every Options.Interval (5 s), and
// on Flush and Close (which the process calls at exit and on SIGTERM), then
// compresses and ships it; a process killed with SIGKILL loses at most one
// interval. A chunk is also cut when it reaches Options.MaxChunk (1 MiB),
// so fast output is held in pieces.
//
// While the store is down or slow, chunks wait in memory, in order, and
// shipping is retried with a backoff (1 s, doubling, at most 30 s; Flush and
// Close retry at once). Past Options.MaxMemory (8 MiB of output) the oldest
// unsent chunk is dropped; Stats counts shipped and dropped chunks and bytes
// and failed attempts, and the Logger warns (at most once an interval, from
// the shipper, never from Write). Nothing older than an outage is lost
// while memory holds it.
//
// # The cap
//
// Options.MaxBytes (1 GiB per process, before compression) caps what is
// kept: after each shipment the oldest files are deleted while the rest is
// longer, so the last bytes stay (at least the newest file). A reader then
// starts with the line
//
//	[drover: N bytes of this log were cut to keep it under the cap]
//
// # Layout
//
// Under the sink's base directory (a local path, file://, s3:// or s3a://;
// see OpenSink):
//
//	<appID>/processes/driver-a<attempt>            empty: the application's index
//	<appID>/processes/executor-<id>-a<attempt>
//	<appID>/driver-a<attempt>/<offset>.log.gz       the process's log
//	<appID>/executor-<id>-a<attempt>/<offset>.log.gz
//
// <offset> (16 digits, zero-padded) is where the file's first byte lies in
// the process's output: it grows with every chunk, so it is the sequence
// that orders files, and it shows gaps. The index lets an object store
// list an application's processes without listing every chunk.
//
// Every chunk is one gzip member; concatenated members are a gzip stream,
// so `gzip -dc` reads any file, and `cat <dir>/* | gzip -dc` a whole log.
// A member's header carries, in an extra subfield 'd','l', the chunk's
// offset, the bytes dropped just before it, and whether it is the mark
// Close writes last (an empty chunk): a reader following the log stops
// there.
//
// On an object store each chunk is its own object, written whole (S3 has
// no append). On a local directory chunks are appended to the process's
// current file, which is closed for appending once it holds
// Options.SegmentBytes (MaxBytes/8) so the cap deletes whole files and keeps
// at least 7/8 of it. A process that finds files of its own name (a name
// used twice) continues after them.
//
// # Reading
//
// Processes lists an application's processes; Open returns one's log as an
// io.Reader, whole or its last lines (ReadOptions.Tail), and following it
// (ReadOptions.Follow) lists its files again every ReadOptions.Poll until
// the process closes its log or the context ends. Where output is missing,
// a marker line says how much and why: cut by the cap, dropped by the
// writer, or lost (a file damaged, or cut while it was being followed).
//
// Files: writer.go (Write, Flush, Close, the memory bound), ship.go (the
// shipper: retries, continuation, the cap), format.go (chunk encoding and
// decoding), sink.go (Sink, local and S3), process.go (names), read.go.
package keptlog
