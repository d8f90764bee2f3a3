package podspec

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

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
	// spark.executorEnv.*.
	Labels, Annotations, NodeSelector, Env map[string]string
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
	// and DROVER_TLS: never a pod spec, config map or log.
	Credentials    Credentials
	AuthSecretName string

	// LogEnv carries the log settings to the executor, which logs before it
	// reaches the driver (config.LogEnv).
	LogEnv []corev1.EnvVar

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
	envvar.Memory, envvar.PodIP, envvar.PodName, envvar.AuthSecret, envvar.TLS,
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
	p := &parser{c: c}
	if appID == "" {
		p.fail("building executor pods: the application id is empty")
	}
	if driverURL == "" {
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
	if driverPod != nil {
		switch {
		case driverPod.Name == "" || driverPod.UID == "":
			p.fail("building executor pods: the driver pod has no name or uid, so it cannot own the executor pods")
		case driverPod.Namespace != "" && driverPod.Namespace != ec.Namespace:
			p.fail("%s=%s: executor pods must be in the driver pod's namespace %s",
				config.KubernetesNamespace.Key(), ec.Namespace, driverPod.Namespace)
		}
	}

	ec.PodNamePrefix = get(p, config.KubernetesExecutorPodNamePrefix)
	if ec.PodNamePrefix == "" {
		ec.PodNamePrefix = defaultPodNamePrefix(ec.AppName, appID)
	}

	p.template(ec)
	p.image(ec)
	p.resources(ec)
	p.metadata(ec)
	p.secrets(ec)

	ec.Volumes = p.volumes(config.KubernetesExecutorVolumes)
	ec.LocalDirs, ec.TmpfsLocalDirs = p.localDirs()

	if !get(p, config.KubernetesExecutorDisableConfigMap) {
		ec.ConfigMapName = ConfigMapName(appID)
	}
	ec.AuthSecretName = AuthSecretName(appID)
	ec.LogEnv = logEnv(c)
	if err := p.err(); err != nil {
		return nil, err
	}
	return ec, nil
}

// parser collects the problems found while resolving an ExecutorConf.
type parser struct {
	c    *config.Conf
	errs []error
}

func (p *parser) fail(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

func (p *parser) add(err error) {
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

func (p *parser) err() error { return errors.Join(p.errs...) }

// get is e.Get, reporting an explicitly set value that is invalid (Get
// would silently use the default).
func get[T any](p *parser, e *config.Entry[T]) T {
	if raw, ok := p.c.Lookup(e.Key()); ok {
		if _, err := e.Parse(raw); err != nil {
			p.add(err)
		}
	}
	return e.Get(p.c)
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

// loadTemplate reads the pod template of role (executor or driver): a YAML or JSON Pod. Fields the Pod
// type does not have are errors (they are typos, silently ignored by
// Spark); what the API server fills in (status, uid, resourceVersion, …)
// is dropped, so a pod fetched with kubectl get -o yaml works as a
// template.
func loadTemplate(file, role string) (*corev1.Pod, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the %s pod template: %w", role, err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, fmt.Errorf("the %s pod template is empty", role)
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(b, &tm); err != nil {
		return nil, fmt.Errorf("parsing the %s pod template: %w", role, err)
	}
	if (tm.Kind != "" && tm.Kind != "Pod") || (tm.APIVersion != "" && tm.APIVersion != "v1") {
		return nil, fmt.Errorf("the %s pod template is a %s %s, not a v1 Pod", role, tm.APIVersion, tm.Kind)
	}
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(b, pod); err != nil {
		return nil, fmt.Errorf("parsing the %s pod template as a Pod: %w", role, err)
	}
	pod.TypeMeta = metav1.TypeMeta{}
	pod.Status = corev1.PodStatus{}
	m := &pod.ObjectMeta
	m.UID, m.ResourceVersion, m.Generation, m.CreationTimestamp, m.ManagedFields = "", "", 0, metav1.Time{}, nil
	m.DeletionTimestamp, m.DeletionGracePeriodSeconds, m.OwnerReferences = nil, nil, nil
	return pod, nil
}

// templateKeys are the configuration keys of a role's pod template, the
// role's name and its container's name when the template names none.
type templateKeys struct {
	file, container *config.Entry[string]
	role            string
	defaultName     string
}

// podTemplate reads and checks a role's pod template (nil for none) from
// the file read(file), and resolves the role's container name: name when
// set, else the template's first container's, else defaultName.
func (p *parser) podTemplate(k templateKeys, name string, read func(file string) string) (*corev1.Pod, string) {
	file := get(p, k.file)
	if file == "" {
		if name != "" {
			p.fail("%s=%s is set without %s", k.container.Key(), name, k.file.Key())
		}
		return nil, k.defaultName
	}
	pod, err := loadTemplate(read(file), k.role)
	if err != nil {
		p.fail("%s=%s: %w", k.file.Key(), file, err)
		return nil, k.defaultName
	}
	containerName := k.defaultName
	cs := pod.Spec.Containers
	switch i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name }); {
	case name != "" && i < 0:
		names := make([]string, len(cs))
		for j := range cs {
			names[j] = cs[j].Name
		}
		p.fail("%s=%s: the template %s has no such container (it has: %s)", k.container.Key(),
			name, file, strings.Join(names, ", "))
		return nil, k.defaultName
	case name != "":
		containerName = name
	case len(cs) > 0 && cs[0].Name != "":
		// As in Spark: without a container name, the template's first
		// container runs the role.
		containerName = cs[0].Name
	case len(cs) > 0:
		pod.Spec.Containers[0].Name = k.defaultName
	}
	return pod, containerName
}

// containerImage resolves a role's image (the key when set, else the
// template container's), pull policy and pull secrets.
func (p *parser) containerImage(key *config.Entry[string], role string, template *corev1.Pod, containerName string) (image, policy string, secrets []string) {
	var tc *corev1.Container
	if template != nil {
		tc = findContainer(template, containerName)
	}
	image = get(p, key)
	if image == "" && tc != nil {
		image = tc.Image
	}
	if image == "" {
		p.fail("no %s image: set %s (or %s) to the application's image",
			role, key.Key(), config.KubernetesContainerImage.Key())
	}
	policy, secrets = p.pull(tc)
	return image, policy, secrets
}

// volumes parses and checks the user's volumes of the family fam.
func (p *parser) volumes(fam *config.PrefixEntry) []Volume {
	vols, err := parseVolumes(fam.Prefix(), fam.Values(p.c))
	p.add(err)
	p.checkHostVolumes(fam.Prefix(), vols)
	return vols
}

// localDirs resolves the local directories (spark.local.dir, else
// DefaultLocalDir), each an absolute path, and whether they are in memory.
func (p *parser) localDirs() (dirs []string, tmpfs bool) {
	tmpfs = get(p, config.KubernetesLocalDirsTmpfs)
	dirs = []string{DefaultLocalDir}
	if config.LocalDir.IsSet(p.c) {
		dirs = config.LocalDirs(p.c)
		for _, d := range dirs {
			if !path.IsAbs(d) {
				p.fail("%s: %q is not an absolute path", config.LocalDir.Key(), d)
			}
		}
	}
	return dirs, tmpfs
}

// logEnv is config.LogEnv as container environment variables.
func logEnv(c *config.Conf) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, kv := range config.LogEnv(c) {
		name, value, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: name, Value: value})
	}
	return env
}

// image resolves the image and pull policy: the keys when set, else the
// template's container.
func (p *parser) image(ec *ExecutorConf) {
	ec.Image, ec.PullPolicy, ec.PullSecrets = p.containerImage(config.KubernetesExecutorContainerImage, "executor",
		ec.Template, ec.ContainerName)
}

// pull resolves the pull policy (the key when set, else the template
// container tc's) and the pull secrets.
func (p *parser) pull(tc *corev1.Container) (policy string, secrets []string) {
	policy = get(p, config.KubernetesContainerImagePullPolicy)
	if !config.KubernetesContainerImagePullPolicy.IsSet(p.c) && tc != nil && tc.ImagePullPolicy != "" {
		policy = string(tc.ImagePullPolicy)
	}
	for s := range strings.SplitSeq(get(p, config.KubernetesContainerImagePullSecrets), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(s); len(msgs) > 0 {
			p.fail("%s: invalid secret name %q: %s", config.KubernetesContainerImagePullSecrets.Key(), s, strings.Join(msgs, "; "))
			continue
		}
		if !slices.Contains(secrets, s) {
			secrets = append(secrets, s)
		}
	}
	return policy, secrets
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

// roleKeys are the configuration keys of a pod role's memory and CPU, the
// role's name and what Kubernetes would reject when its CPU request is
// above the limit.
type roleKeys struct {
	memory, overhead, minOverhead *config.Entry[int64]
	factor                        *config.Entry[float64]
	cores                         *config.Entry[int]
	requestCores, limitCores      *config.Entry[string]
	role, rejected                string
}

// podResources resolves a role's memory (with Spark's overhead) and CPU
// request (requestCores, else cores) and limit, and reports a request above
// the limit.
func (p *parser) podResources(k roleKeys, cores int) (memory, overhead int64, request resource.Quantity, limit *resource.Quantity) {
	memory = get(p, k.memory)
	if memory <= 0 {
		p.fail("%s=%s: expected a size > 0", k.memory.Key(), p.c.Get(k.memory.Key()))
	}
	overhead = Overhead(memory, get(p, k.overhead), k.overhead.IsSet(p.c), get(p, k.factor), get(p, k.minOverhead))
	cpu := func(e *config.Entry[string]) *resource.Quantity {
		s := get(p, e)
		if s == "" {
			return nil
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(s))
		if err != nil || q.Sign() <= 0 {
			p.fail("%s=%s: expected a CPU quantity > 0 such as 0.5, 500m or 2", e.Key(), s)
			return nil
		}
		return &q
	}
	if q := cpu(k.requestCores); q != nil {
		request = *q
	} else {
		request = *resource.NewQuantity(int64(cores), resource.DecimalSI)
	}
	limit = cpu(k.limitCores)
	if limit != nil && request.Cmp(*limit) > 0 {
		req := k.requestCores.Key()
		if !k.requestCores.IsSet(p.c) {
			req = k.cores.Key()
		}
		p.fail("the %s CPU request %s=%s is above the limit %s=%s; Kubernetes would reject %s",
			k.role, req, request.String(), k.limitCores.Key(), limit.String(), k.rejected)
	}
	return memory, overhead, request, limit
}

// Overhead is the executor pod's memory beyond spark.executor.memory:
// overhead when set, else max(factor × memory, minimum), where factor ×
// memory is truncated to whole MiB as Spark does.
func Overhead(memory, overhead int64, overheadSet bool, factor float64, minimum int64) int64 {
	if overheadSet {
		return overhead
	}
	return max(int64(factor*float64(memory/config.MiB))*config.MiB, minimum)
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
	ec.Env = config.ExecutorEnv.Values(p.c)
	for _, k := range slices.Sorted(maps.Keys(ec.Env)) {
		checkEnvName(p, config.ExecutorEnv.Prefix()+k, k)
	}
}

func checkEnvName(p *parser, key, name string) {
	if msgs := validation.IsRelaxedEnvVarName(name); len(msgs) > 0 {
		p.fail("%s: invalid environment variable name %q: %s", key, name, strings.Join(msgs, "; "))
	}
	if slices.Contains(reservedEnv, name) {
		p.fail("%s: the environment variable %s is set by drover", key, name)
	}
}

// secrets resolves secret mounts and secret environment variables.
func (p *parser) secrets(ec *ExecutorConf) {
	ec.Secrets, ec.SecretEnv = p.secretsOf(config.KubernetesExecutorSecrets, config.KubernetesExecutorSecretKeyRefs)
}

// secretsOf resolves a role's secret mounts (the family mountsFam) and
// secret environment variables (refsFam).
func (p *parser) secretsOf(mountsFam, refsFam *config.PrefixEntry) (secrets []SecretMount, secretEnv []SecretEnv) {
	mounts := mountsFam.Values(p.c)
	for _, name := range slices.Sorted(maps.Keys(mounts)) {
		key, dir := mountsFam.Prefix()+name, mounts[name]
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			p.fail("%s: invalid secret name %q: %s", key, name, strings.Join(msgs, "; "))
		}
		if !path.IsAbs(dir) {
			p.fail("%s=%s: expected the absolute path to mount the secret at", key, dir)
		}
		secrets = append(secrets, SecretMount{Name: name, Path: dir})
	}
	refs := refsFam.Values(p.c)
	for _, env := range slices.Sorted(maps.Keys(refs)) {
		key, ref := refsFam.Prefix()+env, refs[env]
		checkEnvName(p, key, env)
		secret, item, ok := strings.Cut(ref, ":")
		secret, item = strings.TrimSpace(secret), strings.TrimSpace(item)
		if !ok || secret == "" || item == "" {
			p.fail("%s=%s: expected <secret>:<key>", key, ref)
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(secret); len(msgs) > 0 {
			p.fail("%s=%s: invalid secret name %q: %s", key, ref, secret, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsConfigMapKey(item); len(msgs) > 0 {
			p.fail("%s=%s: invalid secret key %q: %s", key, ref, item, strings.Join(msgs, "; "))
		}
		secretEnv = append(secretEnv, SecretEnv{Env: env, Secret: secret, Key: item})
	}
	return secrets, secretEnv
}

// secretVolumeName is the volume of a mounted secret: Spark's
// "<secret>-volume" when that is a valid volume name, else
// "secret-volume-<i>".
func secretVolumeName(secret string, i int) string {
	if n := secret + "-volume"; len(validation.IsDNS1123Label(n)) == 0 {
		return n
	}
	return "secret-volume-" + strconv.Itoa(i)
}
