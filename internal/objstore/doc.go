// Package objstore reads and writes S3-compatible object storage for
// TextFile and SaveAsTextFile: paths s3://bucket/key, with s3a:// (Hadoop's
// scheme, which Spark users' paths carry) accepted as an alias.
//
// The driver lists (List: a glob or a "directory", with the semantics of
// local paths) and never reads the data; executors read their splits with
// ranged GETs (ReaderAt) and write task output with streaming multipart
// uploads (Create) that they leave open (Writer.Stage); since a store has
// no rename, the driver commits a job's output by completing the winning
// attempts' uploads (Complete) and aborting the rest (AbortUploads), and
// List refuses output whose job has not committed (PendingMarker without
// SuccessMarker). docs/storage.md describes the protocol. Objects written
// whole (the event log's) go through the AWS SDK's transfer manager
// (Upload), which cannot leave an upload open. Every request goes through
// an explicit retry policy whose retries are counted process-wide
// (RetryTotals, which internal/metrics exports; TakeRetries and AddRetries
// carry executors' counts to the driver).
//
// Files: store.go (the client), writer.go (streaming multipart writes),
// commit.go (pending uploads: staging, completing, aborting), object.go
// (whole-object operations: Put, Copy, Delete, RemovePrefix), upload.go
// (the transfer manager), read.go, list.go, retry.go.
//
// Configuration uses Hadoop S3A's key names under spark.hadoop. (Config,
// built from them by internal/settings.ObjectStore); tuning (part size, backoff, payload signing, copy limits)
// is Config's too, defaulted in one place (Config.WithDefaults), so tests
// set it per Store and no package-level knob exists. Credentials come from
// those keys or the AWS SDK's default chain (environment, shared config,
// web identity). Executors are sent only the non-secret settings
// (settings.ObjectStoreExecutorKeys): their credentials come from their own environment.
package objstore
