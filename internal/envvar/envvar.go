package envvar

// The executor contract: set by the cluster manager that starts an
// executor, read by internal/executor (Spark passes the same facts as
// SPARK_* variables).
const (
	// Role is "executor" in an executor process; without it the
	// application binary is a driver.
	Role = "DROVER_ROLE"
	// RoleExecutor is Role's value in an executor.
	RoleExecutor = "executor"
	// DriverURL is the driver's gRPC address the executor registers with.
	DriverURL = "DROVER_DRIVER_URL"
	// AppID is the application id; tools also find an application's
	// processes by it.
	AppID = "DROVER_APPLICATION_ID"
	// ExecutorID is the executor's id, also in its pod's spark-exec-id
	// label.
	ExecutorID = "DROVER_EXECUTOR_ID"
	// Cores and Memory (bytes) size the executor: GOMAXPROCS and
	// GOMEMLIMIT follow them.
	Cores  = "DROVER_EXECUTOR_CORES"
	Memory = "DROVER_EXECUTOR_MEMORY"
	// PodIP and PodName are the executor pod's (downward API): the
	// address the executor serves shuffle blocks on, and its pod.
	PodIP   = "DROVER_EXECUTOR_POD_IP"
	PodName = "DROVER_EXECUTOR_POD_NAME"
	// AuthSecret is the application's secret with spark.authenticate,
	// from the application's Secret (never a ConfigMap).
	AuthSecret = "DROVER_AUTH_SECRET"
	// TLS is the executors' key material with spark.network.crypto.enabled
	// (the default on Kubernetes): the application's CA certificate and the
	// executors' certificate and private key, as one PEM file. Set by the
	// driver: from the application's Secret on Kubernetes, in the child's
	// environment under local-cluster. Read by the executor at start.
	TLS = "DROVER_TLS"
	// Reconnect is "true" when the driver may restart in place
	// (spark.kubernetes.driver.restartPolicy=OnFailure): the executor
	// then registers again with a lost driver instead of exiting.
	Reconnect = "DROVER_EXECUTOR_RECONNECT"
	// LocalDirs is Spark's variable for an executor's scratch directories
	// (comma-separated); the first takes shuffle files.
	LocalDirs = "SPARK_LOCAL_DIRS"
	// LogLevel and LogFormat carry the driver's log settings to executors,
	// which log before they receive its configuration (internal/logging).
	LogLevel  = "DROVER_LOG_LEVEL"
	LogFormat = "DROVER_LOG_FORMAT"
	// KeptLogDir and KeptLogMaxBytes tell an executor where to keep its
	// log (drover.executor.log.dfsDir) and its cap, so that it holds its
	// output from the first byte; the object store's settings follow at
	// registration.
	KeptLogDir      = "DROVER_KEPT_LOG_DIR"
	KeptLogMaxBytes = "DROVER_KEPT_LOG_MAX_BYTES"
)

// Configuration directories, read by internal/config: the directory of
// spark-defaults.conf. ConfDir (set by the executor pod spec to where the
// executor ConfigMap is mounted, or by the user) wins over SparkConfDir.
const (
	ConfDir      = "DROVER_CONF_DIR"
	SparkConfDir = "SPARK_CONF_DIR"
)

// The driver pod's contract: set by the driver pod spec (downward API),
// read by the cluster-mode driver (internal/k8s): the address it
// advertises to executors unless spark.driver.host is set, and its pod,
// which owns the executors' pods (so the driver need not read it).
const (
	DriverPodIP        = "DROVER_DRIVER_POD_IP"
	DriverPodName      = "DROVER_DRIVER_POD_NAME"
	DriverPodNamespace = "DROVER_DRIVER_POD_NAMESPACE"
	DriverPodUID       = "DROVER_DRIVER_POD_UID"
	// DriverServiceAccount names the account the driver runs as, for the
	// fix an API refusal's message names.
	DriverServiceAccount = "DROVER_DRIVER_SERVICE_ACCOUNT"
)

// Process-node stand-ins: set only by internal/testenv/procnode (tests and
// drover dev-cluster), never by a kubelet.
const (
	// VolumePrefix starts the variable that says where volume NAME of a
	// pod was materialised: $DROVER_VOLUME_<NAME>, NAME upper-cased with
	// '-' and '.' as '_'. Readers: the cluster-mode driver's conf file
	// (internal/k8s/podspec) and the executor's ConfigMap (ConfVolume).
	VolumePrefix = "DROVER_VOLUME_"
	// LocalDirVolume is VolumePrefix for an executor's first local-dir
	// volume (podspec.LocalDirVolumePrefix + "1").
	LocalDirVolume = VolumePrefix + "SPARK_LOCAL_DIR_1"
	// ConfVolume is VolumePrefix for the executor ConfigMap's volume
	// (podspec.ConfVolumeName).
	ConfVolume = VolumePrefix + "DROVER_CONF_VOLUME_EXEC"
	// ServiceAccountDir is where the pod's service-account token, CA and
	// namespace are instead of /var/run/secrets/kubernetes.io/serviceaccount
	// (read by internal/k8s/client's in-cluster configuration).
	ServiceAccountDir = "DROVER_SERVICEACCOUNT_DIR"
)

// DevClusterReadyFD is set by drover dev-cluster's parent process for its
// child: the file descriptor the child writes "ready" to.
const DevClusterReadyFD = "DROVER_DEV_CLUSTER_READY_FD"

// Test harness variables, read by internal/testenv only.
const (
	// TestBin is the directory of the Kubernetes binaries tests run
	// (make test sets it from hack/build-testbin.sh).
	TestBin = "DROVER_TESTBIN"
	// Cache is the cache directory, ~/.cache/drover by default.
	Cache = "DROVER_CACHE"
	// VersityGW is the directory of the versitygw binary S3 tests run
	// (make test sets it from hack/build-versitygw.sh).
	VersityGW = "DROVER_VERSITYGW"
	// Chromium is the browser the web UI's tests drive; /usr/bin/chromium
	// (or chromium on PATH) when unset.
	Chromium = "DROVER_CHROMIUM"
	// Artifacts is where tests save what a person may want to look at
	// (the browser tests' screenshots); the test's temporary directory
	// when unset.
	Artifacts = "DROVER_ARTIFACTS"
	// Kueue is the directory of the Kueue controller, its CRDs and webhooks'
	// manifest that queue tests run (make test sets it from
	// hack/build-kueue.sh).
	Kueue = "DROVER_KUEUE"
	// Containerd is the directory of containerd, its runc shim and ctr
	// that real-node tests run (hack/build-realnode.sh).
	Containerd = "DROVER_CONTAINERD"
	// RealNode, when true, makes a missing prerequisite of the real-node
	// tests fail them rather than skip (make realnode sets it).
	RealNode = "DROVER_REALNODE"
)
