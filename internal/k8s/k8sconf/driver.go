package k8sconf

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

// DriverConf resolves and checks the driver pod of application appID
// from c: command is the application binary in the image, args its
// arguments. Every problem is reported at once, each naming its key.
func DriverConf(c *config.Conf, appID string, command, args []string) (*podspec.DriverConf, error) {
	p := &parser{c: c}
	if appID == "" {
		p.fail("building the driver pod: the application id is empty")
	}
	if len(command) == 0 || command[0] == "" {
		p.fail("building the driver pod: no application binary")
	}
	dc := &podspec.DriverConf{
		AppID:     appID,
		AppName:   get(p, config.AppName),
		Namespace: get(p, config.KubernetesNamespace),
		Cores:     get(p, config.DriverCores),
		Command:   slices.Clone(command),
		Args:      slices.Clone(args),
		Port:      podspec.DefaultDriverPort,
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
	dc.PodName, dc.ServiceName, dc.ConfigMapName = podspec.DriverNames(dc.AppName, appID)

	p.driverTemplate(dc)
	p.driverImage(dc)
	p.driverResources(dc)
	p.driverMetadata(dc)
	dc.Secrets, dc.SecretEnv = p.secretsOf(config.KubernetesDriverSecrets, config.KubernetesDriverSecretKeyRefs)
	vols := p.volumes(config.KubernetesDriverVolumes)
	for _, v := range vols {
		if v.Claim != nil {
			p.fail("%s%s.%s.options.claimName=%s: on-demand claims are for executors only; name an existing claim",
				config.KubernetesDriverVolumes.Prefix(), v.Type, v.Name, podspec.OnDemandClaim)
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
func (p *parser) driverQueue(dc *podspec.DriverConf) {
	labels := maps.Clone(dc.Labels)
	maps.Copy(labels, config.KubernetesExecutorLabels.Values(p.c))
	dc.Queue = p.queue(dc.AppID, get(p, config.KubernetesExecutorSchedulerName), labels)
	if dc.Queue.System != podspec.QueueYuniKorn || dc.Queue.Gang == 0 {
		return
	}
	// Errors in the executors' settings are CheckConf's to report.
	ec, err := ExecutorConf(p.c, dc.AppID, nil, "drover://driver:7078", []string{"/executor"})
	if err != nil {
		return
	}
	pod, err := podspec.ExecutorSizingPod(ec)
	if err != nil {
		return
	}
	dc.Queue.ExecutorRequests = podspec.PodRequests(pod)
	dc.Queue.ExecutorNodeSelector = pod.Spec.NodeSelector
	dc.Queue.ExecutorTolerations = pod.Spec.Tolerations
}

func (p *parser) driverTemplate(dc *podspec.DriverConf) {
	dc.Template, dc.ContainerName = p.podTemplate(templateKeys{
		file: config.KubernetesDriverPodTemplateFile, container: config.KubernetesDriverPodTemplateContainerName,
		role: "driver", defaultName: podspec.DriverContainerName,
	}, get(p, config.KubernetesDriverPodTemplateContainerName), func(file string) string { return file })
}

// driverImage resolves the driver's image; the executors' pull policy and
// secrets are the driver's too.
func (p *parser) driverImage(dc *podspec.DriverConf) {
	dc.Image, dc.PullPolicy, dc.PullSecrets = p.containerImage(config.KubernetesDriverContainerImage, "driver",
		dc.Template, dc.ContainerName)
}

// driverResources resolves CPU and memory like the executors' (Spark's
// BasicDriverFeatureStep): request = spark.kubernetes.driver.request.cores
// or spark.driver.cores, memory = spark.driver.memory + overhead.
func (p *parser) driverResources(dc *podspec.DriverConf) {
	dc.MemoryBytes, dc.OverheadBytes, dc.RequestCores, dc.LimitCores = p.podResources(roleKeys{
		memory: config.DriverMemory, overhead: config.DriverMemoryOverhead,
		factor: config.DriverMemoryOverheadFactor, minOverhead: config.DriverMinMemoryOverhead,
		cores: config.DriverCores, requestCores: config.KubernetesDriverRequestCores,
		limitCores: config.KubernetesDriverLimitCores, role: "driver", rejected: "the driver pod",
	}, dc.Cores)
}

func (p *parser) driverMetadata(dc *podspec.DriverConf) {
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

// DriverCredentialFiles are the driver's Kubernetes credential files that
// drover submit reads on the submitting machine and ships in the driver's
// Secret (as Spark's DriverKubernetesCredentialsFeatureStep), by their key
// in the Secret; the driver finds them under podspec.DriverSecretDir.
var DriverCredentialFiles = map[string]*config.Entry[string]{
	"oauth-token":     config.KubernetesDriverAuth.OAuthTokenFile,
	"client-key.pem":  config.KubernetesDriverAuth.ClientKeyFile,
	"client-cert.pem": config.KubernetesDriverAuth.ClientCertFile,
	"ca.crt":          config.KubernetesDriverAuth.CACertFile,
}

// ReadExecutorTemplate reads and checks the executor pod template file,
// for submit to upload with the driver's configuration.
func ReadExecutorTemplate(file string) (string, error) {
	if _, err := loadTemplate(file, "executor"); err != nil {
		return "", err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading the executor pod template: %w", err)
	}
	return string(b), nil
}
