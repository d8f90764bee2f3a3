package podspec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Credentials are the executors' share of rpc.Auth: the HMAC secret of
// spark.authenticate without encryption, or the TLS bundle (PEM) with
// spark.network.crypto.enabled; neither with authentication off.
type Credentials struct {
	Secret string
	TLS    []byte
}

// IsZero reports whether there are no credentials (authentication off).
func (c Credentials) IsZero() bool { return c.Secret == "" && len(c.TLS) == 0 }

// ExecutorConf is everything the executor steps need, resolved and checked
// once from the application's configuration by k8sconf.ExecutorConf, so that
// bad input fails before any pod is created. Steps only read it; one
// ExecutorConf builds every executor pod of an application (it is safe
// for concurrent builds as long as nobody changes it).
type ExecutorConf struct {
	AppID   string
	AppName string
	// Namespace of the executor pods and their resources.
	Namespace string
	// PodNamePrefix: executor pods are <PodNamePrefix>-exec-<id>.
	PodNamePrefix string
	// DriverURL is what executors dial to register (DROVER_DRIVER_URL).
	DriverURL string

	// Image and PullPolicy of the executor container; PullSecrets are
	// added to the pod's imagePullSecrets.
	Image, PullPolicy string
	PullSecrets       []string

	// Cores is spark.executor.cores (DROVER_EXECUTOR_CORES, GOMAXPROCS).
	Cores int
	// RequestCores is the container's CPU request; LimitCores its CPU
	// limit, nil for none.
	RequestCores resource.Quantity
	LimitCores   *resource.Quantity
	// MemoryBytes is spark.executor.memory (DROVER_EXECUTOR_MEMORY, from
	// which the executor sets GOMEMLIMIT); the container's memory request
	// and limit are MemoryBytes + OverheadBytes.
	MemoryBytes, OverheadBytes int64

	// Labels and Annotations are the user's (values may hold ValueAppID
	// and ValueExecutorID); NodeSelector is spark.kubernetes.node.selector.*
	// with spark.kubernetes.executor.node.selector.* over it; Env is
	// spark.executorEnv.* but for SensitiveEnv.
	Labels, Annotations, NodeSelector, Env map[string]string
	// SensitiveEnv are the spark.executorEnv.* variables whose key or
	// value spark.redaction.regex marks (DB_PASSWORD=...): they travel in
	// the Secret AuthSecretName under EnvSecretPrefix+name
	// ([ExecutorAuthSecret]) and are read by secretKeyRef, so no pod spec
	// shows them.
	SensitiveEnv map[string]string
	// SchedulerName and ServiceAccount; "" keeps the template's.
	SchedulerName, ServiceAccount string
	// MountServiceAccountToken: spark.kubernetes.authenticate.executor.
	// serviceAccountName is set explicitly. Otherwise executors run as the
	// driver's account but without its API token: executors never call
	// the API, and user code in them must not manage the namespace's pods.
	MountServiceAccountToken bool
	// TerminationGracePeriod in seconds.
	TerminationGracePeriod int64
	// DriverPod owns the executor pods and their resources; nil in client
	// mode when the driver does not run in a pod.
	DriverPod *corev1.Pod

	// Secrets are mounted, SecretEnv are environment variables from
	// Secrets, Volumes are the user's volumes; each sorted.
	Secrets   []SecretMount
	SecretEnv []SecretEnv
	Volumes   []Volume
	// LocalDirs are the executor's local directories, backed by emptyDir
	// volumes (in memory when TmpfsLocalDirs) unless a user volume named
	// spark-local-dir-* exists.
	LocalDirs      []string
	TmpfsLocalDirs bool

	// Template is the parsed executor pod template (nil for none); it is
	// never modified. TemplateContainer is
	// spark.kubernetes.executor.podTemplateContainerName as set, and
	// ContainerName the executor container's resolved name.
	Template          *corev1.Pod
	TemplateContainer string
	ContainerName     string

	// ConfigMapName is the executor ConfigMap mounted at ConfDir; "" for
	// none (spark.kubernetes.executor.disableConfigMap).
	ConfigMapName string

	// Credentials are what the executors prove they belong to the
	// application with; the driver sets them (master.NewSecurity) before
	// building pods. They reach the executors only through the Secret
	// AuthSecretName ([ExecutorAuthSecret]), read into DROVER_AUTH_SECRET
	// and DROVER_TLS: never a pod spec, config map or log. SensitiveEnv
	// travels in the same Secret.
	Credentials    Credentials
	AuthSecretName string

	// LogEnv carries the log settings to the executor, which logs before it
	// reaches the driver (config.LogEnv).
	LogEnv []corev1.EnvVar

	// Queue is the queue (Kueue, Volcano, YuniKorn) the pods wait in.
	Queue Queue

	// Reconnect: the driver may restart in its pod
	// (spark.kubernetes.driver.restartPolicy=OnFailure), so an executor
	// that loses it retries and registers with the next attempt
	// (DROVER_EXECUTOR_RECONNECT) instead of exiting.
	Reconnect bool

	// Command is the executor container's command: the application binary
	// inside the image (the role comes from DROVER_ROLE). Empty keeps the
	// template's command and arguments, else the image's entrypoint.
	Command []string
}

// SecretMount mounts the Secret Name at Path
// (spark.kubernetes.executor.secrets.<Name>=<Path>).
type SecretMount struct {
	Name, Path string
}

// SecretEnv sets the environment variable Env from Key of Secret
// (spark.kubernetes.executor.secretKeyRef.<Env>=<Secret>:<Key>).
type SecretEnv struct {
	Env, Secret, Key string
}

// Bind returns a copy of ec for the driver at driverURL, in driverPod (nil
// when it runs in none), with the checks k8sconf.ExecutorConf makes of them.
func (ec *ExecutorConf) Bind(driverPod *corev1.Pod, driverURL string) (*ExecutorConf, error) {
	var errs []error
	if driverURL == "" {
		errs = append(errs, errors.New("building executor pods: the driver URL is empty"))
	}
	out := *ec
	out.DriverURL, out.DriverPod = driverURL, driverPod
	if err := out.CheckDriverPod(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &out, nil
}

// CheckDriverPod reports whether ec.DriverPod (nil for none) can own the
// executor pods.
func (ec *ExecutorConf) CheckDriverPod() error {
	driverPod := ec.DriverPod
	switch {
	case driverPod == nil:
		return nil
	case driverPod.Name == "" || driverPod.UID == "":
		return errors.New("building executor pods: the driver pod has no name or uid, so it cannot own the executor pods")
	case driverPod.Namespace != "" && driverPod.Namespace != ec.Namespace:
		return fmt.Errorf("%s=%s: executor pods must be in the driver pod's namespace %s",
			KeyNamespace, ec.Namespace, driverPod.Namespace)
	}
	return nil
}

// EnvSecretPrefix prefixes, in the application's Secrets, the keys of the
// environment values kept out of pod specs (see [ExecutorConf.SensitiveEnv]).
const EnvSecretPrefix = "env."

// userEnv is the variables of plain and sensitive, by name; the sensitive
// ones are read from key EnvSecretPrefix+name of the Secret secret.
func userEnv(plain, sensitive map[string]string, secret string) []corev1.EnvVar {
	out := sortedEnv(plain)
	for _, k := range slices.Sorted(maps.Keys(sensitive)) {
		out = append(out, corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: EnvSecretPrefix + k,
		}}})
	}
	slices.SortStableFunc(out, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return out
}
