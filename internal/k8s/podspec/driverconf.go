package podspec

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/drover-project/drover/internal/config"
)

// DriverConf is everything the driver steps need, resolved and checked
// once by [NewDriverConf] so that bad input fails before anything is
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

// NewDriverConf resolves and checks the driver pod of application appID
// from c: command is the application binary in the image, args its
// arguments. Every problem is reported at once, each naming its key.
func NewDriverConf(c *config.Conf, appID string, command, args []string) (*DriverConf, error) {
	p := &parser{c: c}
	if appID == "" {
		p.fail("building the driver pod: the application id is empty")
	}
	if len(command) == 0 || command[0] == "" {
		p.fail("building the driver pod: no application binary")
	}
	dc := &DriverConf{
		AppID:     appID,
		AppName:   get(p, config.AppName),
		Namespace: get(p, config.KubernetesNamespace),
		Cores:     get(p, config.DriverCores),
		Command:   slices.Clone(command),
		Args:      slices.Clone(args),
		Port:      DefaultDriverPort,
	}
	if config.DriverPort.IsSet(c) {
		if dc.Port = get(p, config.DriverPort); dc.Port <= 0 || dc.Port > 65535 {
			p.fail("%s=%d: a cluster-mode driver needs a fixed port between 1 and 65535", config.DriverPort.Key(), dc.Port)
		}
	}
	if get(p, config.UIEnabled) {
		// The driver Service exposes the UI: it cannot follow a port picked
		// at random.
		if dc.UIPort = get(p, config.UIPort); dc.UIPort == 0 {
			p.fail("%s=0: a cluster-mode driver's web UI needs a fixed port (or %s=false)", config.UIPort.Key(), config.UIEnabled.Key())
		}
		dc.UIToken = get(p, config.UIRequireToken)
	}
	prefix := defaultPodNamePrefix(dc.AppName, appID)
	dc.PodName = prefix + "-driver"
	dc.ServiceName = prefix + "-driver-svc"
	if len(dc.ServiceName) > maxLabelLength {
		dc.ServiceName = "drover-" + appIDPart(appID) + "-driver-svc"
	}
	dc.ConfigMapName = "drover-drv-" + appIDPart(appID) + "-conf-map"

	p.driverTemplate(dc)
	p.driverImage(dc)
	p.driverResources(dc)
	p.driverMetadata(dc)
	dc.Secrets, dc.SecretEnv = p.secretsOf(config.KubernetesDriverSecrets, config.KubernetesDriverSecretKeyRefs)
	vols := p.volumes(config.KubernetesDriverVolumes)
	for _, v := range vols {
		if v.Claim != nil {
			p.fail("%s%s.%s.options.claimName=%s: on-demand claims are for executors only; name an existing claim",
				config.KubernetesDriverVolumes.Prefix(), v.Type, v.Name, OnDemandClaim)
		}
	}
	dc.Volumes = vols
	dc.LocalDirs, dc.TmpfsLocalDirs = p.localDirs()
	dc.LogEnv = logEnv(c)
	dc.RestartPolicy = corev1.RestartPolicy(get(p, config.KubernetesDriverRestartPolicy))
	dc.MaxRestarts = get(p, config.KubernetesDriverMaxRestarts)
	p.driverQueue(dc)
	if err := p.err(); err != nil {
		return nil, err
	}
	return dc, nil
}

// driverQueue resolves the driver's queue: the executors' queue system
// (spark.kubernetes.scheduler.name decides for both), named by the key or a
// Spark-style label on either role. With a YuniKorn gang the driver declares
// the executors' task group, so it needs an executor pod's size.
func (p *parser) driverQueue(dc *DriverConf) {
	labels := maps.Clone(dc.Labels)
	maps.Copy(labels, config.KubernetesExecutorLabels.Values(p.c))
	dc.Queue = p.queue(dc.AppID, get(p, config.KubernetesExecutorSchedulerName), labels)
	if dc.Queue.System != QueueYuniKorn || dc.Queue.Gang == 0 {
		return
	}
	// Errors in the executors' settings are CheckConf's to report.
	ec, err := NewExecutorConf(p.c, dc.AppID, nil, "drover://driver:7078", []string{"/executor"})
	if err != nil {
		return
	}
	pod, err := buildPod(ec, 1, []Step{basicStep{}, mountVolumesStep{}, localDirsStep{}})
	if err != nil {
		return
	}
	dc.Queue.ExecutorRequests = PodRequests(pod)
	dc.Queue.ExecutorNodeSelector = pod.Spec.NodeSelector
	dc.Queue.ExecutorTolerations = pod.Spec.Tolerations
}

func (p *parser) driverTemplate(dc *DriverConf) {
	dc.Template, dc.ContainerName = p.podTemplate(templateKeys{
		file: config.KubernetesDriverPodTemplateFile, container: config.KubernetesDriverPodTemplateContainerName,
		role: "driver", defaultName: DriverContainerName,
	}, get(p, config.KubernetesDriverPodTemplateContainerName), func(file string) string { return file })
}

// driverImage resolves the driver's image; the executors' pull policy and
// secrets are the driver's too.
func (p *parser) driverImage(dc *DriverConf) {
	dc.Image, dc.PullPolicy, dc.PullSecrets = p.containerImage(config.KubernetesDriverContainerImage, "driver",
		dc.Template, dc.ContainerName)
}

// driverResources resolves CPU and memory like the executors' (Spark's
// BasicDriverFeatureStep): request = spark.kubernetes.driver.request.cores
// or spark.driver.cores, memory = spark.driver.memory + overhead.
func (p *parser) driverResources(dc *DriverConf) {
	dc.MemoryBytes, dc.OverheadBytes, dc.RequestCores, dc.LimitCores = p.podResources(roleKeys{
		memory: config.DriverMemory, overhead: config.DriverMemoryOverhead,
		factor: config.DriverMemoryOverheadFactor, minOverhead: config.DriverMinMemoryOverhead,
		cores: config.DriverCores, requestCores: config.KubernetesDriverRequestCores,
		limitCores: config.KubernetesDriverLimitCores, role: "driver", rejected: "the driver pod",
	}, dc.Cores)
}

func (p *parser) driverMetadata(dc *DriverConf) {
	check := func(fam *config.PrefixEntry, reserved bool) map[string]string {
		vals := fam.Values(p.c)
		for _, k := range slices.Sorted(maps.Keys(vals)) {
			if reserved && slices.Contains(reservedLabels, k) {
				p.fail("%s%s: the label %s is reserved for drover", fam.Prefix(), k, k)
				continue
			}
			checkLabel(fam.Prefix()+k, k, vals[k], &p.errs)
		}
		return vals
	}
	dc.Labels = check(config.KubernetesDriverLabels, true)
	dc.ServiceLabels = check(config.KubernetesDriverServiceLabels, true)
	dc.Annotations = config.KubernetesDriverAnnotations.Values(p.c)
	dc.ServiceAnnotations = config.KubernetesDriverServiceAnnotations.Values(p.c)
	dc.NodeSelector = check(config.KubernetesNodeSelector, false)
	maps.Copy(dc.NodeSelector, check(config.KubernetesDriverNodeSelector, false))
	dc.SchedulerName = get(p, config.KubernetesDriverSchedulerName)
	dc.ServiceAccount = get(p, config.KubernetesDriverServiceAccountName)
	for key, name := range map[string]string{
		config.KubernetesDriverSchedulerName.Key():      dc.SchedulerName,
		config.KubernetesDriverServiceAccountName.Key(): dc.ServiceAccount,
	} {
		if name == "" {
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			p.fail("%s=%s: %s", key, name, strings.Join(msgs, "; "))
		}
	}
	dc.Env, dc.SensitiveEnv = p.env(config.KubernetesDriverEnv)
}

// mountView is the ExecutorConf the executor steps that the driver shares
// (secrets, volumes, local directories) read.
func (dc *DriverConf) mountView() *ExecutorConf {
	return &ExecutorConf{
		ContainerName: dc.ContainerName, Secrets: dc.Secrets, SecretEnv: dc.SecretEnv, Volumes: dc.Volumes,
		LocalDirs: dc.LocalDirs, TmpfsLocalDirs: dc.TmpfsLocalDirs,
	}
}
