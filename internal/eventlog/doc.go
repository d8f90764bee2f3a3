// Package eventlog writes the driver's event stream to files, as Spark's
// EventLoggingListener does, and reads them back for the history server.
//
// A Writer is a consumer of the event bus: every event becomes one line of
// JSON (events.Marshal), buffered, flushed every second and at the end, and
// optionally compressed (zstd or gzip). The exception is tasks: those that
// start and end successfully between two flushes, as most do, become rows
// of numbers in one TaskRows line per stage attempt (events.TaskRows), any
// other that starts and ends between them takes one TaskEnd line carrying
// its Launch time, and Replay hands on each one's TaskStart before its
// TaskEnd. Files are named as Spark names them
// in spark.eventLog.dir: one file <appId>[.codec] (.inprogress while the
// application runs), or with spark.eventLog.rolling.enabled a directory
// eventlog_v2_<appId> of files events_<n>_<appId>[.codec] cut at
// spark.eventLog.rolling.maxFileSize, beside an empty marker
// appstatus_<appId> (.inprogress while it runs). The directory may be local
// or on S3 (s3://bucket/prefix). A driver that restarts in its pod writes
// one log per attempt, each named with <appId>_<attemptId> where <appId>
// stands above (drover-1_1, then drover-1_2: Spark's names for attempts),
// so a restarted driver leaves its crashed predecessor's log, still
// .inprogress, as it was.
//
// Writing the log never stops the application: the first error is logged,
// and the writer then drops what it is given.
//
// Replay reads a log back, compressed or not, finished or not: unknown
// events (from a newer drover) are skipped, and a last line cut short by a
// driver that was killed is ignored.
package eventlog
