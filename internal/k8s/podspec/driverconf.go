package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DriverConf is everything the driver steps need, resolved and checked
// once by k8sconf.DriverConf so that bad input fails before anything is
// created.
type DriverConf struct {
	AppID, AppName, Namespace string
	// PodName, ServiceName and ConfigMapName name the driver pod, its
	// headless service and its configuration. SecretName, when set, names
	// the Secret of its sensitive settings (DriverSecret), mounted at
	// DriverSecretDir.
	PodName, ServiceName, ConfigMapName, SecretName string
	// Port is the driver's RPC port.
	Port int
	// UIPort is the web UI's port, 0 when spark.ui.enabled is false.
	UIPort int
	// UIToken: the web UI asks for the application's token
	// (drover.ui.requireToken), which travels in the Secret SecretName.
	UIToken bool

	Image, PullPolicy string
	PullSecrets       []string
	// Cores is spark.driver.cores (GOMAXPROCS); RequestCores and LimitCores
	// are the container's CPU request and limit (nil for none).
	Cores        int
	RequestCores resource.Quantity
	LimitCores   *resource.Quantity
	// MemoryBytes is spark.driver.memory (GOMEMLIMIT); the container's
	// memory request and limit are MemoryBytes + OverheadBytes.
	MemoryBytes, OverheadBytes int64

	// Labels and Annotations of the driver pod, the headless service's
	// ServiceLabels and ServiceAnnotations, the NodeSelector, and Env
	// (spark.kubernetes.driverEnv.* but for SensitiveEnv).
	Labels, Annotations, ServiceLabels, ServiceAnnotations, NodeSelector, Env map[string]string
	SchedulerName, ServiceAccount                                             string
	// SensitiveEnv are the spark.kubernetes.driverEnv.* variables that
	// spark.redaction.regex marks: they travel in the Secret SecretName
	// under EnvSecretPrefix+name ([DriverSecret]), read by secretKeyRef.
	SensitiveEnv map[string]string

	// Secrets, SecretEnv, Volumes, LocalDirs and TmpfsLocalDirs are as in
	// ExecutorConf, from the driver's keys; no on-demand claims.
	Secrets        []SecretMount
	SecretEnv      []SecretEnv
	Volumes        []Volume
	LocalDirs      []string
	TmpfsLocalDirs bool

	// Template is the parsed driver pod template (nil for none), and
	// ContainerName the driver container's resolved name.
	Template      *corev1.Pod
	ContainerName string

	LogEnv []corev1.EnvVar
	// RestartPolicy is the driver pod's (spark.kubernetes.driver.restartPolicy):
	// with OnFailure the kubelet restarts a failed driver in its pod, up to
	// MaxRestarts times (drover.kubernetes.driver.maxRestarts), which the pod
	// carries in AnnotationMaxRestarts for the driver and drover status.
	RestartPolicy corev1.RestartPolicy
	MaxRestarts   int
	// Queue is the queue (Kueue, Volcano, YuniKorn) the driver pod waits in.
	Queue Queue
	// Command runs the application binary; Args are the application's
	// arguments, after --properties-file DriverConfFile.
	Command, Args []string
}

// mountView is the ExecutorConf the executor steps that the driver shares
// (secrets, volumes, local directories) read.
func (dc *DriverConf) mountView() *ExecutorConf {
	return &ExecutorConf{
		ContainerName: dc.ContainerName, Secrets: dc.Secrets, SecretEnv: dc.SecretEnv, Volumes: dc.Volumes,
		LocalDirs: dc.LocalDirs, TmpfsLocalDirs: dc.TmpfsLocalDirs,
	}
}
