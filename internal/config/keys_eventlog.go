package config

// The event log, Spark's spark.eventLog.* with Spark 4's defaults but the
// codec's.
var (
	EventLogEnabled = Bool("spark.eventLog.enabled", false,
		"Write the application's events to spark.eventLog.dir, for `drover history` to show its UI and REST "+
			"API after it ended.")

	EventLogDir = String("spark.eventLog.dir", "/tmp/spark-events",
		"Directory the event logs are written to: a local path (or `file:` URI), created when missing, or an "+
			"`s3://bucket/prefix`, where a file appears once complete (a rolled log's files one by one). In "+
			"cluster mode a local directory lives and dies with the driver pod unless it is on a volume.")

	EventLogCompress = Bool("spark.eventLog.compress", true,
		"Compress the event log with spark.eventLog.compression.codec.")

	// snappy, not Spark 4's zstd: about a third of zstd's CPU on the
	// driver (zstd was most of the event log's cost to the task path),
	// for a log 1.5 to 2.4 times as large (docs/benchmarks-notes.md).
	EventLogCompressionCodec = Enum("spark.eventLog.compression.codec", "snappy", []string{"zstd", "snappy", "gzip"},
		"Codec of a compressed event log, also its files' extension. zstd and snappy frame their data as "+
			"Spark's do; gzip is drover's own; Spark's lz4 and lzf are not supported. Spark 4 defaults to "+
			"zstd, which makes logs a third to a half smaller for about three times the driver's CPU.")

	EventLogRolling = Bool("spark.eventLog.rolling.enabled", true,
		"Write the event log as a directory eventlog_v2_<appId> of files cut at "+
			"spark.eventLog.rolling.maxFileSize, instead of one file. A driver that is killed leaves its "+
			"finished files whole.")

	EventLogRollingMaxFileSize = Bytes("spark.eventLog.rolling.maxFileSize", "128m", B,
		"Size of the events (before compression) after which a rolled event log starts its next file.",
		Check("at least 2m", func(n int64) bool { return n >= 2*MiB }))

	EventLogOverwrite = Bool("spark.eventLog.overwrite", false,
		"Replace an event log of the same application id that already exists, instead of writing none.")
)
