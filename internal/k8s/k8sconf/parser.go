package k8sconf

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

// parser collects the problems found while resolving a podspec.ExecutorConf,
// DriverConf, Queue or VolcanoGroup from the configuration.
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

// containerImage resolves a role's image (the key when set, else the
// template container's), pull policy and pull secrets.
func (p *parser) containerImage(key *config.Entry[string], role string, template *corev1.Pod, containerName string) (image, policy string, secrets []string) {
	var tc *corev1.Container
	if template != nil {
		if i := slices.IndexFunc(template.Spec.Containers, func(c corev1.Container) bool { return c.Name == containerName }); i >= 0 {
			tc = &template.Spec.Containers[i]
		}
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

// volumes parses and checks the user's volumes of the family fam.
func (p *parser) volumes(fam *config.PrefixEntry) []podspec.Volume {
	vols, err := parseVolumes(fam.Prefix(), fam.Values(p.c))
	p.add(err)
	p.checkHostVolumes(fam.Prefix(), vols)
	return vols
}

// localDirs resolves the local directories (spark.local.dir, else
// podspec.DefaultLocalDir), each an absolute path, and whether they are in memory.
func (p *parser) localDirs() (dirs []string, tmpfs bool) {
	tmpfs = get(p, config.KubernetesLocalDirsTmpfs)
	dirs = []string{podspec.DefaultLocalDir}
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

// secretsOf resolves a role's secret mounts (the family mountsFam) and
// secret environment variables (refsFam).
func (p *parser) secretsOf(mountsFam, refsFam *config.PrefixEntry) (secrets []podspec.SecretMount, secretEnv []podspec.SecretEnv) {
	mounts := mountsFam.Values(p.c)
	for _, name := range slices.Sorted(maps.Keys(mounts)) {
		key, dir := mountsFam.Prefix()+name, mounts[name]
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			p.fail("%s: invalid secret name %q: %s", key, name, strings.Join(msgs, "; "))
		}
		if !path.IsAbs(dir) {
			p.fail("%s=%s: expected the absolute path to mount the secret at", key, dir)
		}
		secrets = append(secrets, podspec.SecretMount{Name: name, Path: dir})
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
		secretEnv = append(secretEnv, podspec.SecretEnv{Env: env, Secret: secret, Key: item})
	}
	return secrets, secretEnv
}

// env resolves a role's environment (the family fam): plain values, and
// the sensitive ones, whose key or value spark.redaction.regex (or a secret
// entry) marks. Those go into a Secret under podspec.EnvSecretPrefix+name, read by
// secretKeyRef: a literal value in a pod spec is shown to whoever may get
// pods.
func (p *parser) env(fam *config.PrefixEntry) (plain, sensitive map[string]string) {
	plain, sensitive = map[string]string{}, map[string]string{}
	vals := fam.Values(p.c)
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		key, v := fam.Prefix()+k, vals[k]
		checkEnvName(p, key, k)
		if !p.c.Sensitive(key, v) {
			plain[k] = v
			continue
		}
		if msgs := validation.IsConfigMapKey(podspec.EnvSecretPrefix + k); len(msgs) > 0 {
			p.fail("%s: spark.redaction.regex marks its value, which drover keeps in a Secret under %s%s, "+
				"an invalid Secret key: %s; name the variable with letters, digits, '-', '_' and '.'",
				key, podspec.EnvSecretPrefix, k, strings.Join(msgs, "; "))
			continue
		}
		sensitive[k] = v
	}
	return plain, sensitive
}

func checkEnvName(p *parser, key, name string) {
	if msgs := validation.IsRelaxedEnvVarName(name); len(msgs) > 0 {
		p.fail("%s: invalid environment variable name %q: %s", key, name, strings.Join(msgs, "; "))
	}
	if slices.Contains(reservedEnv, name) {
		p.fail("%s: the environment variable %s is set by drover", key, name)
	}
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
