package podspec

import (
	"maps"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s/snapshot"
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
// once from the application's configuration by [NewExecutorConf], so that
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

// reservedLabels are set by drover; users may not set them.
var reservedLabels = []string{snapshot.LabelAppID, snapshot.LabelRole, snapshot.LabelExecutorID, snapshot.LabelInactive}

// reservedEnv are set by the basic step; spark.executorEnv may not set them.
var reservedEnv = []string{
	envvar.Role, envvar.DriverURL, envvar.AppID, envvar.ExecutorID, envvar.Cores,
	envvar.Memory, envvar.PodIP, envvar.PodName, envvar.AuthSecret, envvar.TLS, envvar.Reconnect,
}

// NewExecutorConf resolves and checks the executor pod configuration of
// application appID from c. driverPod (nil in client mode without a
// driver pod) owns the executors; driverURL is what executors dial;
// command is the executor's command (see ExecutorConf.Command).
//
// It reports every problem at once (errors.Join), each naming its key: no
// image, bad volumes, secrets or labels, an unreadable or invalid pod
// template, a CPU request above the limit, and so on.
func NewExecutorConf(c *config.Conf, appID string, driverPod *corev1.Pod, driverURL string, command []string) (*ExecutorConf, error) {
	return newExecutorConf(c, appID, driverPod, driverURL, command, true)
}

// ParseExecutorConf is NewExecutorConf before the driver runs: the
// driver's pod and URL are left for [ExecutorConf.Bind], so the
// configuration is read and checked once, at start-up.
func ParseExecutorConf(c *config.Conf, appID string, command []string) (*ExecutorConf, error) {
	return newExecutorConf(c, appID, nil, "", command, false)
}

// Bind returns a copy of ec for the driver at driverURL, in driverPod (nil
// when it runs in none), with NewExecutorConf's checks of them.
func (ec *ExecutorConf) Bind(driverPod *corev1.Pod, driverURL string) (*ExecutorConf, error) {
	p := &parser{}
	if driverURL == "" {
		p.fail("building executor pods: the driver URL is empty")
	}
	out := *ec
	out.DriverURL, out.DriverPod = driverURL, driverPod
	p.checkDriverPod(&out)
	if err := p.err(); err != nil {
		return nil, err
	}
	return &out, nil
}

// checkDriverPod checks that ec.DriverPod can own the executor pods.
func (p *parser) checkDriverPod(ec *ExecutorConf) {
	if driverPod := ec.DriverPod; driverPod != nil {
		switch {
		case driverPod.Name == "" || driverPod.UID == "":
			p.fail("building executor pods: the driver pod has no name or uid, so it cannot own the executor pods")
		case driverPod.Namespace != "" && driverPod.Namespace != ec.Namespace:
			p.fail("%s=%s: executor pods must be in the driver pod's namespace %s",
				config.KubernetesNamespace.Key(), ec.Namespace, driverPod.Namespace)
		}
	}
}

func newExecutorConf(c *config.Conf, appID string, driverPod *corev1.Pod, driverURL string, command []string, bound bool) (*ExecutorConf, error) {
	p := &parser{c: c}
	if appID == "" {
		p.fail("building executor pods: the application id is empty")
	}
	if bound && driverURL == "" {
		p.fail("building executor pods: the driver URL is empty")
	}
	ec := &ExecutorConf{
		AppID:     appID,
		AppName:   get(p, config.AppName),
		Namespace: get(p, config.KubernetesNamespace),
		DriverURL: driverURL,
		DriverPod: driverPod,
		Command:   slices.Clone(command),
		Cores:     get(p, config.ExecutorCores),
	}
	p.checkDriverPod(ec)

	ec.PodNamePrefix = get(p, config.KubernetesExecutorPodNamePrefix)
	if ec.PodNamePrefix == "" {
		ec.PodNamePrefix = defaultPodNamePrefix(ec.AppName, appID)
	}

	p.template(ec)
	p.image(ec)
	p.resources(ec)
	p.metadata(ec)
	p.secrets(ec)
	ec.Queue = p.queue(appID, ec.SchedulerName, ec.Labels)

	ec.Volumes = p.volumes(config.KubernetesExecutorVolumes)
	ec.LocalDirs, ec.TmpfsLocalDirs = p.localDirs()

	if !get(p, config.KubernetesExecutorDisableConfigMap) {
		ec.ConfigMapName = ConfigMapName(appID)
	}
	ec.AuthSecretName = AuthSecretName(appID)
	ec.LogEnv = logEnv(c)
	ec.Reconnect = get(p, config.KubernetesDriverRestartPolicy) == string(corev1.RestartPolicyOnFailure)
	if err := p.err(); err != nil {
		return nil, err
	}
	return ec, nil
}

// template reads and checks the pod template, and resolves the executor
// container's name.
func (p *parser) template(ec *ExecutorConf) {
	ec.TemplateContainer = get(p, config.KubernetesExecutorPodTemplateContainerName)
	// A cluster-mode driver on a process node (tests) finds the uploaded
	// template in its ConfigMap volume's directory.
	ec.Template, ec.ContainerName = p.podTemplate(templateKeys{
		file: config.KubernetesExecutorPodTemplateFile, container: config.KubernetesExecutorPodTemplateContainerName,
		role: "executor", defaultName: ExecutorContainerName,
	}, ec.TemplateContainer, func(file string) string { return LocalConfFile(file, os.Getenv) })
}

// image resolves the image and pull policy: the keys when set, else the
// template's container.
func (p *parser) image(ec *ExecutorConf) {
	ec.Image, ec.PullPolicy, ec.PullSecrets = p.containerImage(config.KubernetesExecutorContainerImage, "executor",
		ec.Template, ec.ContainerName)
}

// resources resolves CPU and memory. Memory overhead is Spark's:
// spark.executor.memoryOverhead, else max(factor × memory in whole MiB,
// minMemoryOverhead).
func (p *parser) resources(ec *ExecutorConf) {
	ec.MemoryBytes, ec.OverheadBytes, ec.RequestCores, ec.LimitCores = p.podResources(roleKeys{
		memory: config.ExecutorMemory, overhead: config.ExecutorMemoryOverhead,
		factor: config.ExecutorMemoryOverheadFactor, minOverhead: config.ExecutorMinMemoryOverhead,
		cores: config.ExecutorCores, requestCores: config.KubernetesExecutorRequestCores,
		limitCores: config.KubernetesExecutorLimitCores, role: "executor", rejected: "every executor pod",
	}, ec.Cores)

	ec.TerminationGracePeriod = int64(get(p, config.KubernetesExecutorTerminationGracePeriod).Seconds())
	if !config.KubernetesExecutorTerminationGracePeriod.IsSet(p.c) && ec.Template != nil &&
		ec.Template.Spec.TerminationGracePeriodSeconds != nil {
		ec.TerminationGracePeriod = *ec.Template.Spec.TerminationGracePeriodSeconds
	}
}

// metadata resolves labels, annotations, node selector, scheduler, service
// account and environment.
func (p *parser) metadata(ec *ExecutorConf) {
	labelsKey := config.KubernetesExecutorLabels.Prefix()
	ec.Labels = config.KubernetesExecutorLabels.Values(p.c)
	for _, k := range slices.Sorted(maps.Keys(ec.Labels)) {
		if slices.Contains(reservedLabels, k) {
			p.fail("%s%s: the label %s is reserved for drover", labelsKey, k, k)
			continue
		}
		checkLabel(labelsKey+k, k, substitute(ec.Labels[k], ec.AppID, 1), &p.errs)
	}
	ec.Annotations = config.KubernetesExecutorAnnotations.Values(p.c)
	for _, k := range slices.Sorted(maps.Keys(ec.Annotations)) {
		if msgs := content.IsLabelKey(k); len(msgs) > 0 {
			p.fail("%s%s: invalid annotation name: %s", config.KubernetesExecutorAnnotations.Prefix(), k, strings.Join(msgs, "; "))
		}
	}
	ec.NodeSelector = config.KubernetesNodeSelector.Values(p.c)
	for _, fam := range []*config.PrefixEntry{config.KubernetesNodeSelector, config.KubernetesExecutorNodeSelector} {
		vals := fam.Values(p.c)
		for _, k := range slices.Sorted(maps.Keys(vals)) {
			checkLabel(fam.Prefix()+k, k, vals[k], &p.errs)
			ec.NodeSelector[k] = vals[k]
		}
	}
	ec.SchedulerName = get(p, config.KubernetesExecutorSchedulerName)
	ec.ServiceAccount = get(p, config.KubernetesExecutorServiceAccountName)
	ec.MountServiceAccountToken = config.KubernetesExecutorServiceAccountName.IsSet(p.c)
	for _, name := range []string{ec.SchedulerName, ec.ServiceAccount} {
		if name == "" {
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			key := config.KubernetesExecutorSchedulerName.Key()
			if name == ec.ServiceAccount {
				key = config.KubernetesExecutorServiceAccountName.Key()
			}
			p.fail("%s=%s: %s", key, name, strings.Join(msgs, "; "))
		}
	}
	ec.Env, ec.SensitiveEnv = p.env(config.ExecutorEnv)
}

// secrets resolves secret mounts and secret environment variables.
func (p *parser) secrets(ec *ExecutorConf) {
	ec.Secrets, ec.SecretEnv = p.secretsOf(config.KubernetesExecutorSecrets, config.KubernetesExecutorSecretKeyRefs)
}
