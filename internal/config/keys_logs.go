package config

import "strings"

// Kept logs: every process's log written to a directory or an object store
// while it runs, so it outlives the pod (internal/keptlog).
var (
	DriverLogPersistToDfs = Bool("spark.driver.log.persistToDfs.enabled", false,
		"Keep the application's logs in spark.driver.log.dfsDir while it runs, so they outlive their pods: the "+
			"driver's (every attempt) and, unlike Spark, which keeps only a client-mode driver's, every executor's "+
			"(see drover.executor.log.dfsDir). Each process ships what it wrote, compressed, every 5 s, at exit and "+
			"on SIGTERM; one killed with SIGKILL loses at most its last 5 s. `drover logs`, the web UI's Executors "+
			"page and `drover history` read them after the pods are gone.")

	DriverLogDfsDir = String("spark.driver.log.dfsDir", "",
		"Where the kept logs go: a local directory (a volume every pod mounts), file:///dir, or s3://bucket/prefix "+
			"(s3a:// too) with the spark.hadoop.fs.s3a.* settings. Required when "+
			"spark.driver.log.persistToDfs.enabled is true.",
		Optional())

	DriverLogLayout = String("spark.driver.log.layout", "%d{yy/MM/dd HH:mm:ss.SSS} %t %p %c{1}: %m%n%ex",
		"Spark's log4j pattern for its kept driver log. Accepted for compatibility, without effect: drover keeps "+
			"the bytes each process wrote, in its log format (drover.log.format).")

	ExecutorLogDfsDir = String("drover.executor.log.dfsDir", "",
		"Where the executors' logs are kept when spark.driver.log.persistToDfs.enabled is true: a directory as "+
			"spark.driver.log.dfsDir takes, or `none` to keep only the driver's. Unset means spark.driver.log.dfsDir.",
		Optional())

	LogPersistMaxBytes = Bytes("drover.log.persist.maxBytes", "1g", MiB,
		"Most log one process keeps (before compression): past it the oldest part is deleted, so the last bytes "+
			"stay, and `drover logs` starts with a line saying how much was cut.",
		AtLeast(int64(MiB)))
)

// NoExecutorLogs is drover.executor.log.dfsDir's value that keeps only the
// driver's log.
const NoExecutorLogs = "none"

// KeptLogDirs are where the driver and the executors keep their logs, as
// c says (unchecked: settings.ReadKeptLogs checks them); empty when not
// kept.
func KeptLogDirs(c *Conf) (driver, executors string) {
	if !DriverLogPersistToDfs.Get(c) {
		return "", ""
	}
	driver = strings.TrimSpace(DriverLogDfsDir.Get(c))
	switch e := strings.TrimSpace(ExecutorLogDfsDir.Get(c)); {
	case e == "":
		executors = driver
	case strings.EqualFold(e, NoExecutorLogs):
	default:
		executors = e
	}
	return driver, executors
}
