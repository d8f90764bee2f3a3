package podspec

// The configuration keys and file that the objects built here name. The
// package reads no configuration (k8sconf does, into ExecutorConf,
// DriverConf, Queue and VolcanoGroup); k8sconf's tests check that these
// are internal/config's.
const (
	// KeyNamespace is spark.kubernetes.namespace, which ExecutorConf.Bind's
	// error names.
	KeyNamespace = "spark.kubernetes.namespace"
	// KeyExecutorAnnotations and KeyDriverAnnotations prefix the user's
	// annotations of each role, which the YuniKorn task group errors name.
	KeyExecutorAnnotations = "spark.kubernetes.executor.annotation."
	KeyDriverAnnotations   = "spark.kubernetes.driver.annotation."
	// DefaultsFile is the properties file's name in the executor and
	// driver ConfigMaps (config.DefaultsFile).
	DefaultsFile = "spark-defaults.conf"
)
