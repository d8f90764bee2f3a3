package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/envvar"
)

// Application and deployment.
var (
	AppName = String("spark.app.name", "",
		"Name of the application, shown in logs and status output and used to name its Kubernetes resources. "+
			"Spark defaults to the main class; drover uses the file name of the application binary.",
		DefaultFunc(binaryName, "the application binary's file name"))

	Master = String("spark.master", "",
		"Cluster manager to run on: `local`, `local[N]`, `local[*]`, `local[N,F]`, `local-cluster[N,C,M]` or "+
			"`k8s://https://host:port`. When unset, drover runs with `local[*]`, as spark-submit does. "+
			"Unlike Spark, where spark.master in a properties file wins over `MASTER`, the variable wins over the file here.",
		Optional(), Env("MASTER"))

	AppID = String("spark.app.id", "",
		"Id of the application, which labels its pods (spark-app-selector). Set by `drover submit` for a "+
			"cluster-mode driver; unset means a new id per run.",
		Optional())

	DeployMode = Enum("spark.submit.deployMode", "client", []string{"client", "cluster"},
		"Where the driver runs: `client` runs it where the application is started; `cluster` runs it in a pod on the cluster.")
)

// Executors and driver resources.
var (
	ExecutorInstances = Int("spark.executor.instances", 2,
		"Number of executors with static allocation. With dynamic allocation, the initial number of executors is "+
			"the largest of this (only when set explicitly), spark.dynamicAllocation.minExecutors and "+
			"spark.dynamicAllocation.initialExecutors.",
		AtLeast(0))

	ExecutorCores = Int("spark.executor.cores", 1,
		"Cores of each executor: it runs up to spark.executor.cores / spark.task.cpus tasks at once, "+
			"and its GOMAXPROCS is set to this.",
		AtLeast(1))

	ExecutorMemory = Bytes("spark.executor.memory", "1g", MiB,
		"Memory of each executor process; the executor's Go memory limit (GOMEMLIMIT) is derived from it. "+
			"The executor pod requests this plus spark.executor.memoryOverhead.")

	ExecutorMemoryOverhead = Bytes("spark.executor.memoryOverhead", "", MiB,
		"Additional memory of each executor pod for what the Go heap limit does not cover (goroutine stacks, "+
			"buffers, the operating system). Unset means max(spark.executor.memoryOverheadFactor × "+
			"spark.executor.memory, spark.executor.minMemoryOverhead).",
		Optional())

	ExecutorMemoryOverheadFactor = Float("spark.executor.memoryOverheadFactor", 0.1,
		"Fraction of spark.executor.memory added as overhead when spark.executor.memoryOverhead is unset.",
		Check("> 0", func(f float64) bool { return f > 0 }))

	ExecutorMinMemoryOverhead = Bytes("spark.executor.minMemoryOverhead", "384m", MiB,
		"Smallest overhead computed from spark.executor.memoryOverheadFactor.")

	DriverCores = Int("spark.driver.cores", 1,
		"Cores of the driver process (cluster mode: the driver pod's CPU request).",
		AtLeast(1))

	DriverMemory = Bytes("spark.driver.memory", "1g", MiB,
		"Memory of the driver process (cluster mode: the driver pod requests this plus spark.driver.memoryOverhead).")

	DriverMemoryOverhead = Bytes("spark.driver.memoryOverhead", "", MiB,
		"Additional memory of the driver pod in cluster mode. Unset means max(spark.driver.memoryOverheadFactor × "+
			"spark.driver.memory, spark.driver.minMemoryOverhead).",
		Optional())

	DriverMemoryOverheadFactor = Float("spark.driver.memoryOverheadFactor", 0.1,
		"Fraction of spark.driver.memory added as overhead when spark.driver.memoryOverhead is unset.",
		Check("> 0", func(f float64) bool { return f > 0 }))

	DriverMinMemoryOverhead = Bytes("spark.driver.minMemoryOverhead", "384m", MiB,
		"Smallest overhead computed from spark.driver.memoryOverheadFactor.")
)

// Driver networking and results.
var (
	DriverHost = String("spark.driver.host", "",
		"Host name or IP address executors use to reach the driver. Empty means resolved at runtime: the "+
			"driver's headless service in cluster mode, otherwise an address of the local host. "+
			"Set from `SPARK_LOCAL_IP`, which in Spark sets the default local address.",
		DefaultDoc("`\"\"` (resolved at runtime)"), Env("SPARK_LOCAL_IP"))

	DriverBindAddress = String("spark.driver.bindAddress", "",
		"Address the driver's RPC server listens on.",
		FallbackTo(DriverHost))

	DriverPort = Int("spark.driver.port", 0,
		"Port of the driver's RPC server; 0 picks a free port.",
		InRange(0, 65535))

	DriverMaxResultSize = Bytes("spark.driver.maxResultSize", "1g", B,
		"Limit on the total size of the serialized results of all partitions of one action (such as Collect); "+
			"0 means unlimited. An action above the limit fails.")
)

// Scheduling.
var (
	TaskCPUs = Int("spark.task.cpus", 1,
		"Cores each task occupies on its executor.",
		AtLeast(1))

	TaskMaxFailures = Int("spark.task.maxFailures", 4,
		"Number of failures of one task before its job is aborted (so the number of attempts). "+
			"Local mode does not retry tasks unless the master is `local[N,F]`.",
		AtLeast(1))

	TaskMaxDirectResultSize = Bytes("spark.task.maxDirectResultSize", "1m", B,
		"Task results up to this size travel with the task's status; larger results stay on the executor "+
			"and the driver fetches them separately.")

	DefaultParallelism = Int("spark.default.parallelism", 0,
		"Default number of partitions of datasets created without one. Unset means the number of cores in "+
			"local mode, otherwise the total cores of all registered executors (at least 2).",
		Optional(), AtLeast(1))

	StageMaxConsecutiveAttempts = Int("spark.stage.maxConsecutiveAttempts", 4,
		"Number of consecutive attempts of a stage (after fetch failures) before the job is aborted.",
		AtLeast(1))

	MinRegisteredResourcesRatio = Float("spark.scheduler.minRegisteredResourcesRatio", 0,
		"Fraction of the requested executors that must register before the first job is scheduled, waiting at "+
			"most spark.scheduler.maxRegisteredResourcesWaitingTime. Unset means the cluster manager's "+
			"default: 0.8 on Kubernetes (as in Spark), 1 for local-cluster, none for local.",
		Optional(), InRange(0.0, 1.0))

	MaxRegisteredResourcesWaitingTime = Duration("spark.scheduler.maxRegisteredResourcesWaitingTime", "30s", time.Millisecond,
		"Longest wait for spark.scheduler.minRegisteredResourcesRatio of the executors to register before "+
			"scheduling starts anyway.")
)

// Network and heartbeats.
var (
	NetworkTimeout = Duration("spark.network.timeout", "120s", time.Second,
		"Default timeout of network interactions: the driver removes an executor not heard from for this long, "+
			"and an executor that cannot reach the driver for this long exits. Must be greater than "+
			"spark.executor.heartbeatInterval.")

	NetworkTimeoutInterval = Duration("spark.network.timeoutInterval", "60s", time.Millisecond,
		"How often the driver looks for executors that timed out.")

	ExecutorHeartbeatInterval = Duration("spark.executor.heartbeatInterval", "10s", time.Millisecond,
		"Interval between an executor's heartbeats to the driver while it runs tasks; an executor with none "+
			"heartbeats once a quarter of spark.network.timeout has passed (or this interval, if longer). "+
			"Must be smaller than spark.network.timeout.")
)

// Security.
var (
	Authenticate = Bool("spark.authenticate", false,
		"Every connection between the application's processes (control stream, result fetch, shuffle blocks) "+
			"proves it belongs to the application: with spark.network.crypto.enabled, by certificates from a "+
			"certificate authority the driver creates for the application; otherwise by an HMAC of "+
			"spark.authenticate.secret. Connections that do not are refused and logged. On by default on "+
			"`k8s://` and `local-cluster` masters; `false` is an explicit opt-out, for debugging.",
		DefaultDoc("`true` on `k8s://` and `local-cluster[…]` masters, else `false`"))

	NetworkCryptoEnabled = Bool("spark.network.crypto.enabled", false,
		"Encrypt and mutually authenticate every connection between the application's processes with TLS 1.3. "+
			"The driver creates a certificate authority for the application (ECDSA P-256) and certificates "+
			"for itself and its executors, and keeps the authority's key in memory only; executors get "+
			"theirs through the application's Kubernetes Secret. Nothing to configure: no keystore, no "+
			"`spark.ssl.*`. Needs spark.authenticate. Without it, the HMAC of spark.authenticate.secret "+
			"travels in the clear and can be replayed by whoever records it.",
		DefaultDoc("spark.authenticate's value on `k8s://` masters, else `false` (local-cluster: the "+
			"processes share one host, whose loopback traffic other users cannot read)"))

	AuthenticateSecret = String("spark.authenticate.secret", "",
		"Secret for spark.authenticate. Unset means the driver generates a random secret for the application "+
			"(as Spark does on Kubernetes) and passes it to its executors. Never logged or shown. "+
			"`_SPARK_AUTH_SECRET` is the variable Spark's processes read it from.",
		Optional(), Secret(), Env("_SPARK_AUTH_SECRET"))

	RedactionRegex = String("spark.redaction.regex", defaultRedactionRegex,
		"Regular expression (Go syntax) that selects the configuration keys and values to hide when a "+
			"configuration is logged or shown; matching values are replaced by `"+RedactedValue+"`.",
		Check("that compiles as a regular expression", validRegexp))
)

// Storage and shuffle.
var (
	LocalDir = String("spark.local.dir", "",
		"Comma-separated directories for scratch space: shuffle files, spilled data and executor work "+
			"directories. Unset means os.TempDir() ($TMPDIR, else /tmp). Unlike Spark, where "+
			"`SPARK_LOCAL_DIRS` wins over everything, --conf and flags win over the variable.",
		DefaultFunc(os.TempDir, "`$TMPDIR` or `/tmp`"), Env("SPARK_LOCAL_DIRS"))

	FilesMaxPartitionBytes = Bytes("spark.files.maxPartitionBytes", "128m", B,
		"Largest number of bytes packed into one partition when reading files.")

	ParquetCompressionCodec = Enum("spark.sql.parquet.compression.codec", "snappy",
		[]string{"uncompressed", "snappy", "gzip", "zstd", "lz4"},
		"Compression codec of the files SaveAsParquet writes. lz4 is Parquet's LZ4_RAW.")

	MemoryFraction = Float("spark.memory.fraction", 0.6,
		"Fraction of an executor's memory (of the driver's in local mode) that its tasks share for shuffle "+
			"buffers, aggregation and sorting; each task gets its core's share and spills to disk past it.",
		Check("in (0, 1]", func(f float64) bool { return f > 0 && f <= 1 }))

	ReducerMaxSizeInFlight = Bytes("spark.reducer.maxSizeInFlight", "48m", KiB,
		"Largest amount of map output a reduce task fetches at once.")

	ShuffleMaxPeerConnections = Int("drover.shuffle.maxPeerConnections", 256,
		"Most connections an executor keeps open to other executors for shuffle fetches, one per peer. Past it "+
			"the least recently used connection no fetch is using is closed, and when all are in use a fetch from "+
			"a new peer waits for one to be released. Connections unused for spark.network.timeout are closed too, "+
			"so an executor of a job with thousands of executors does not keep a socket to every one.",
		AtLeast(1))

	RPCMessageMaxSize = Bytes("spark.rpc.message.maxSize", "128m", MiB,
		"Largest task the driver sends (its function's input, serialized): a larger one fails its job at once, "+
			"naming the task's size, instead of breaking the executor's connection. Launches are batched up to this "+
			"size too. At most 255m: the driver's RPC carries at most 256 MiB per message.",
		Check("between 1m and 255m", func(v int64) bool { return v >= MiB && v <= 255*MiB }))
)

// Object storage: Hadoop S3A's keys, under spark.hadoop. as Spark users set
// them, for s3:// and s3a:// paths.
var (
	S3AEndpoint = String("spark.hadoop.fs.s3a.endpoint", "",
		"Endpoint of the S3-compatible store for s3:// and s3a:// paths, such as `http://127.0.0.1:7070` or "+
			"`minio.storage:9000` (https is assumed without a scheme). Unset means AWS S3 itself. Sent to executors.",
		Optional())

	S3APathStyleAccess = Bool("spark.hadoop.fs.s3a.path.style.access", false,
		"Address buckets as endpoint/bucket/key instead of bucket.endpoint/key, as most self-hosted stores "+
			"(MinIO, versitygw, Ceph) need. Sent to executors.")

	S3AEndpointRegion = String("spark.hadoop.fs.s3a.endpoint.region", "",
		"Region of the store, which requests are signed for. Unset means the AWS SDK's default chain "+
			"(`AWS_REGION`, the shared config file), else `us-east-1`. Sent to executors.",
		Optional())

	S3AAccessKey = String("spark.hadoop.fs.s3a.access.key", "",
		"Access key id for s3:// paths, used by the driver (and local-mode tasks) with spark.hadoop.fs.s3a.secret.key. "+
			"Unset means the AWS SDK's default credential chain: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, "+
			"the shared credentials file, web identity (IRSA), EKS pod identity, instance roles. Never sent to "+
			"executors: they take credentials from that same chain in their own environment — on Kubernetes, "+
			"`AWS_*` variables from a Secret (spark.kubernetes.executor.secretKeyRef.*) or a workload identity; "+
			"under local-cluster, the environment the driver was started with.",
		Optional(), Secret())

	S3ASecretKey = String("spark.hadoop.fs.s3a.secret.key", "",
		"Secret access key that goes with spark.hadoop.fs.s3a.access.key. Never logged, shown or sent to executors.",
		Optional(), Secret())

	S3ASessionToken = String("spark.hadoop.fs.s3a.session.token", "",
		"Session token of temporary credentials, with spark.hadoop.fs.s3a.access.key and .secret.key. "+
			"Never logged, shown or sent to executors.",
		Optional(), Secret())
)

// Dynamic allocation.
var (
	DynamicAllocationEnabled = Bool("spark.dynamicAllocation.enabled", false,
		"Scale the number of executors with the workload, between spark.dynamicAllocation.minExecutors and "+
			"spark.dynamicAllocation.maxExecutors.")

	DynamicAllocationMinExecutors = Int("spark.dynamicAllocation.minExecutors", 0,
		"Lower bound on the number of executors with dynamic allocation.",
		AtLeast(0))

	DynamicAllocationMaxExecutors = Int("spark.dynamicAllocation.maxExecutors", 1<<31-1,
		"Upper bound on the number of executors with dynamic allocation.",
		Infinity(), AtLeast(0))

	DynamicAllocationInitialExecutors = Int("spark.dynamicAllocation.initialExecutors", 0,
		"Initial number of executors with dynamic allocation (see spark.executor.instances).",
		FallbackTo(DynamicAllocationMinExecutors), AtLeast(0))

	DynamicAllocationExecutorAllocationRatio = Float("spark.dynamicAllocation.executorAllocationRatio", 1,
		"Fraction of the executors needed for full parallelism that dynamic allocation requests; "+
			"below 1 trades speed for fewer executors.",
		Check("> 0 and ≤ 1", func(f float64) bool { return f > 0 && f <= 1 }))

	DynamicAllocationSchedulerBacklogTimeout = Duration("spark.dynamicAllocation.schedulerBacklogTimeout", "1s", time.Second,
		"How long tasks must have been waiting before dynamic allocation requests more executors.")

	DynamicAllocationSustainedSchedulerBacklogTimeout = Duration("spark.dynamicAllocation.sustainedSchedulerBacklogTimeout", "",
		time.Second,
		"Interval between further requests while the backlog lasts (each request doubles the number added).",
		FallbackTo(DynamicAllocationSchedulerBacklogTimeout))

	DynamicAllocationExecutorIdleTimeout = Duration("spark.dynamicAllocation.executorIdleTimeout", "60s", time.Second,
		"An executor idle for this long, with no cached data and no shuffle data in use, is removed.")

	DynamicAllocationCachedExecutorIdleTimeout = Duration("spark.dynamicAllocation.cachedExecutorIdleTimeout", "infinity",
		time.Second,
		"An idle executor holding cached data is removed after this long.",
		Infinity())

	DynamicAllocationShuffleTrackingEnabled = Bool("spark.dynamicAllocation.shuffleTracking.enabled", true,
		"Keep executors that hold shuffle data needed by active jobs, so dynamic allocation works without an "+
			"external shuffle service.")

	DynamicAllocationShuffleTrackingTimeout = Duration("spark.dynamicAllocation.shuffleTracking.timeout", "infinity",
		time.Millisecond,
		"An idle executor holding shuffle data of no active job is removed after this long.",
		Infinity())

	DecommissionEnabled = Bool("spark.decommission.enabled", false,
		"Decommission executors gracefully (stop giving them tasks and move their shuffle data) instead of "+
			"killing them when scaling down.")

	CleanerReferenceTracking = Bool("spark.cleaner.referenceTracking", true,
		"Delete a shuffle's files on the executors once the program holds no dataset that reads it (found by "+
			"Go's garbage collector), so disk is freed and dynamic allocation can release those executors.")
)

// Web UI and its REST API.
var (
	UIEnabled = Bool("spark.ui.enabled", true,
		"Serve the web UI, the REST API (`/api/v1/applications/...`) and the Prometheus metrics (`/metrics`, "+
			"`/metrics/executors/prometheus`) from the driver while the application runs. If it cannot start, the "+
			"application goes on without it.")

	UIPort = Int("spark.ui.port", 4040,
		"Port of the web UI. When it is taken, the next ports are tried, up to spark.port.maxRetries of them; "+
			"0 picks a free port.",
		InRange(0, 65535))

	PortMaxRetries = Int("spark.port.maxRetries", 16,
		"How many ports after a busy spark.ui.port are tried before the web UI gives up (the job runs on without it).",
		AtLeast(0))

	UIRetainedJobs = Int("spark.ui.retainedJobs", 1000,
		"How many finished jobs the web UI and REST API remember; older ones are forgotten (running jobs always stay).",
		AtLeast(1))

	UIRetainedStages = Int("spark.ui.retainedStages", 1000,
		"How many finished stage attempts the web UI and REST API remember.",
		AtLeast(1))

	UIRetainedTasks = Int("spark.ui.retainedTasks", 100000,
		"How many tasks of one stage the web UI and REST API remember; the oldest finished ones go first. A stage's "+
			"counts and totals still include forgotten tasks; its quantiles are over the remembered ones.",
		AtLeast(1))

	UIRetainedDeadExecutors = Int("spark.ui.retainedDeadExecutors", 100,
		"How many removed executors the web UI and REST API remember.",
		AtLeast(0))

	UICustomExecutorLogURL = String("spark.ui.custom.executor.log.url", "",
		"Link to each executor's log in the web UI and the REST API's executorLogs, from an external log service. "+
			"Placeholders as on Spark on Kubernetes: `{{APP_ID}}`, `{{EXECUTOR_ID}}`, and `{{NAME}}` for every "+
			"`spark.executorEnv.SPARK_EXECUTOR_ATTRIBUTE_NAME` with a literal value; drover adds `{{POD_NAME}}`, "+
			"`{{NODE_NAME}}` and `{{KUBERNETES_NAMESPACE}}`. An executor for which a placeholder has no value gets no link.",
		Optional())

	UIRetainedAllocationRounds = Int("drover.ui.retainedAllocationRounds", 100,
		"How many of the Kubernetes allocator's latest rounds the web UI's Allocation page shows, with their decisions.",
		AtLeast(1))
)

// Drover's own keys.
var (
	LogLevel = Enum("drover.log.level", "info", []string{"debug", "info", "warn", "error"},
		"Log level of the driver and its executors.",
		Env(envvar.LogLevel))

	LogFormat = Enum("drover.log.format", "text", []string{"text", "json"},
		"Log format of the driver and its executors: `text` (logfmt) or `json`.",
		Env(envvar.LogFormat))

	ShowConsoleProgress = Bool("spark.ui.showConsoleProgress", true,
		"Show the progress of running stages on the driver's standard error: a bar per stage, redrawn in place "+
			"like Spark's console progress bar when it is a terminal, otherwise a plain line every "+
			"drover.progress.interval. Spark enables it only in shells; drover by default.")

	ProgressInterval = Duration("drover.progress.interval", "10s", time.Second,
		"How often stage progress is printed when standard error is not a terminal (logs of a driver pod).",
		Check("> 0", func(d time.Duration) bool { return d > 0 }))

	SchedulerPrefetch = Int("drover.scheduler.prefetch", 2,
		"Tasks per executor core the driver may queue on an executor ahead of its free cores, only while more tasks "+
			"wait than all executors have free cores. Queued tasks start the moment a core frees, so executors never "+
			"idle for a driver round trip between short tasks; 0 disables queueing (Spark's behaviour).",
		AtLeast(0))
	SchedulerMaxPrefetch = Int("drover.scheduler.maxPrefetch", 128,
		"The most tasks per executor core the driver queues ahead of free cores once a stage's tasks are measured "+
			"to be short: it queues about 2 ms of the stage's measured task time per core, never fewer than "+
			"drover.scheduler.prefetch, so tasks of microseconds leave in large batches and a stage's end waits "+
			"for no executor's queue longer than that.",
		AtLeast(0))
)

func init() {
	Relation(checkHeartbeat)
	Relation(checkDynamicAllocation)
}

// checkHeartbeat is Spark's SparkConf.validateSettings rule (SPARK-22754):
// heartbeats less frequent than the timeout lose executors.
func checkHeartbeat(c *Conf) error {
	timeout, interval := NetworkTimeout.Get(c), ExecutorHeartbeatInterval.Get(c)
	if timeout <= interval {
		return fmt.Errorf("%s=%s must be greater than %s=%s",
			NetworkTimeout.Key(), c.Get(NetworkTimeout.Key()), ExecutorHeartbeatInterval.Key(), c.Get(ExecutorHeartbeatInterval.Key()))
	}
	return nil
}

// checkDynamicAllocation is the part of Spark's
// ExecutorAllocationManager.validateSettings that concerns configuration,
// checked only when dynamic allocation is enabled, as in Spark.
func checkDynamicAllocation(c *Conf) error {
	if !DynamicAllocationEnabled.Get(c) {
		return nil
	}
	var problems []string
	lo, hi := DynamicAllocationMinExecutors.Get(c), DynamicAllocationMaxExecutors.Get(c)
	if hi == 0 {
		problems = append(problems, fmt.Sprintf("%s must be ≥ 1", DynamicAllocationMaxExecutors.Key()))
	}
	if lo > hi {
		problems = append(problems, fmt.Sprintf("%s=%d must be ≤ %s=%s",
			DynamicAllocationMinExecutors.Key(), lo, DynamicAllocationMaxExecutors.Key(), c.Get(DynamicAllocationMaxExecutors.Key())))
	}
	for _, e := range []*Entry[time.Duration]{DynamicAllocationSchedulerBacklogTimeout, DynamicAllocationSustainedSchedulerBacklogTimeout} {
		if e.Get(c) <= 0 {
			problems = append(problems, fmt.Sprintf("%s must be > 0", e.Key()))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("dynamic allocation: %s", strings.Join(problems, "; "))
}

// binaryName is the default application name: the file name the binary
// was started as.
func binaryName() string {
	if len(os.Args) > 0 && os.Args[0] != "" {
		return filepath.Base(os.Args[0])
	}
	if exe, err := os.Executable(); err == nil {
		return filepath.Base(exe)
	}
	return "drover-app"
}

// LocalDirs returns the directories of spark.local.dir (comma-separated,
// blanks dropped); never empty.
func LocalDirs(c *Conf) []string {
	var dirs []string
	for d := range strings.SplitSeq(LocalDir.Get(c), ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		dirs = []string{os.TempDir()}
	}
	return dirs
}

// LogEnv returns the environment (NAME=value) that carries the log settings
// of c to executor processes, which log before they receive the driver's
// configuration; the names are envvar.LogLevel and envvar.LogFormat.
func LogEnv(c *Conf) []string {
	env := []string{
		LogLevel.opts.env[0] + "=" + LogLevel.Get(c),
		LogFormat.opts.env[0] + "=" + LogFormat.Get(c),
	}
	if _, dir := KeptLogDirs(c); dir != "" {
		env = append(env, envvar.KeptLogDir+"="+dir,
			envvar.KeptLogMaxBytes+"="+strconv.FormatInt(LogPersistMaxBytes.Get(c), 10))
	}
	return env
}
