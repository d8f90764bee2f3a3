package k8sconf

import (
	"maps"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// reservedLabels are set by drover; users may not set them.
var reservedLabels = []string{snapshot.LabelAppID, snapshot.LabelRole, snapshot.LabelExecutorID, snapshot.LabelInactive}

// reservedEnv are set by the basic step; spark.executorEnv may not set them.
var reservedEnv = []string{
	envvar.Role, envvar.DriverURL, envvar.AppID, envvar.ExecutorID, envvar.Cores,
	envvar.Memory, envvar.PodIP, envvar.PodName, envvar.AuthSecret, envvar.TLS, envvar.Reconnect,
	envvar.KeptLogDir, envvar.KeptLogMaxBytes,
}

// ExecutorConf resolves and checks the executor pod configuration of
// application appID from c. driverPod (nil in client mode without a
// driver pod) owns the executors; driverURL is what executors dial;
// command is the executor's command (see podspec.ExecutorConf.Command).
//
// It reports every problem at once (errors.Join), each naming its key: no
// image, bad volumes, secrets or labels, an unreadable or invalid pod
// template, a CPU request above the limit, and so on.
func ExecutorConf(c *config.Conf, appID string, driverPod *corev1.Pod, driverURL string, command []string) (*podspec.ExecutorConf, error) {
	return newExecutorConf(c, appID, driverPod, driverURL, command, true)
}

// ParseExecutorConf is ExecutorConf before the driver runs: the
// driver's pod and URL are left for [podspec.ExecutorConf.Bind], so the
// configuration is read and checked once, at start-up.
func ParseExecutorConf(c *config.Conf, appID string, command []string) (*podspec.ExecutorConf, error) {
	return newExecutorConf(c, appID, nil, "", command, false)
}

func newExecutorConf(c *config.Conf, appID string, driverPod *corev1.Pod, driverURL string, command []string, bound bool) (*podspec.ExecutorConf, error) {
	p := &parser{c: c}
	if appID == "" {
		p.fail("building executor pods: the application id is empty")
	}
	if bound && driverURL == "" {
		p.fail("building executor pods: the driver URL is empty")
	}
	ec := &podspec.ExecutorConf{
		AppID:     appID,
		AppName:   get(p, config.AppName),
		Namespace: get(p, config.KubernetesNamespace),
		DriverURL: driverURL,
		DriverPod: driverPod,
		Command:   slices.Clone(command),
		Cores:     get(p, config.ExecutorCores),
	}
	p.add(ec.CheckDriverPod())

	ec.PodNamePrefix = get(p, config.KubernetesExecutorPodNamePrefix)
	if ec.PodNamePrefix == "" {
		ec.PodNamePrefix = podspec.DefaultPodNamePrefix(ec.AppName, appID)
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
		ec.ConfigMapName = podspec.ConfigMapName(appID)
	}
	ec.AuthSecretName = podspec.AuthSecretName(appID)
	ec.LogEnv = logEnv(c)
	ec.Reconnect = get(p, config.KubernetesDriverRestartPolicy) == string(corev1.RestartPolicyOnFailure)
	if err := p.err(); err != nil {
		return nil, err
	}
	return ec, nil
}

// template reads and checks the pod template, and resolves the executor
// container's name.
func (p *parser) template(ec *podspec.ExecutorConf) {
	ec.TemplateContainer = get(p, config.KubernetesExecutorPodTemplateContainerName)
	// A cluster-mode driver on a process node (tests) finds the uploaded
	// template in its ConfigMap volume's directory.
	ec.Template, ec.ContainerName = p.podTemplate(templateKeys{
		file: config.KubernetesExecutorPodTemplateFile, container: config.KubernetesExecutorPodTemplateContainerName,
		role: "executor", defaultName: podspec.ExecutorContainerName,
	}, ec.TemplateContainer, func(file string) string { return podspec.LocalConfFile(file, os.Getenv) })
}

// image resolves the image and pull policy: the keys when set, else the
// template's container.
func (p *parser) image(ec *podspec.ExecutorConf) {
	ec.Image, ec.PullPolicy, ec.PullSecrets = p.containerImage(config.KubernetesExecutorContainerImage, "executor",
		ec.Template, ec.ContainerName)
}

// resources resolves CPU and memory. Memory overhead is Spark's:
// spark.executor.memoryOverhead, else max(factor × memory in whole MiB,
// minMemoryOverhead).
func (p *parser) resources(ec *podspec.ExecutorConf) {
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
func (p *parser) metadata(ec *podspec.ExecutorConf) {
	labelsKey := config.KubernetesExecutorLabels.Prefix()
	ec.Labels = config.KubernetesExecutorLabels.Values(p.c)
	for _, k := range slices.Sorted(maps.Keys(ec.Labels)) {
		if slices.Contains(reservedLabels, k) {
			p.fail("%s%s: the label %s is reserved for drover", labelsKey, k, k)
			continue
		}
		checkLabel(labelsKey+k, k, podspec.Substitute(ec.Labels[k], ec.AppID, 1), &p.errs)
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
func (p *parser) secrets(ec *podspec.ExecutorConf) {
	ec.Secrets, ec.SecretEnv = p.secretsOf(config.KubernetesExecutorSecrets, config.KubernetesExecutorSecretKeyRefs)
}
