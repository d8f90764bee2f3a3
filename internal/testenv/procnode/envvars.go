package procnode

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// configError is a problem with a pod's configuration that a kubelet reports
// as CreateContainerConfigError and retries: a missing Secret, ConfigMap or
// key that may still appear.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func configErrorf(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}

// expand replaces $(NAME) in s with lookup(NAME) when NAME is defined and
// leaves it as written otherwise; $$ is an escaped $. These are the rules the
// kubelet applies to env values, command and args.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// envList is an ordered environment in which a later value of a name
// replaces an earlier one in place.
type envList struct {
	names []string
	vals  map[string]string
}

func (l *envList) set(name, val string) {
	if l.vals == nil {
		l.vals = map[string]string{}
	}
	if _, ok := l.vals[name]; !ok {
		l.names = append(l.names, name)
	}
	l.vals[name] = val
}

func (l *envList) lookup(name string) (string, bool) {
	v, ok := l.vals[name]
	return v, ok
}

func (l *envList) environ() []string {
	out := make([]string, 0, len(l.names))
	for _, n := range l.names {
		out = append(out, n+"="+l.vals[n])
	}
	return out
}

// podRefs reads the Secrets and ConfigMaps a pod refers to, once each.
type podRefs struct {
	client     kubernetes.Interface
	namespace  string
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

func newPodRefs(client kubernetes.Interface, namespace string) *podRefs {
	return &podRefs{client: client, namespace: namespace, secrets: map[string]*corev1.Secret{}, configMaps: map[string]*corev1.ConfigMap{}}
}

// secret returns the named Secret, nil when it doesn't exist.
func (r *podRefs) secret(ctx context.Context, name string) (*corev1.Secret, error) {
	return cachedGet(ctx, r.secrets, "secret", r.namespace, name, r.client.CoreV1().Secrets(r.namespace).Get)
}

// configMap returns the named ConfigMap, nil when it doesn't exist.
func (r *podRefs) configMap(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	return cachedGet(ctx, r.configMaps, "configmap", r.namespace, name, r.client.CoreV1().ConfigMaps(r.namespace).Get)
}

// cachedGet returns the named object of kind from cache, else from get,
// and caches it; nil when it doesn't exist.
func cachedGet[T any](ctx context.Context, cache map[string]*T, kind, namespace, name string,
	get func(context.Context, string, metav1.GetOptions) (*T, error)) (*T, error) {
	if o, ok := cache[name]; ok {
		return o, nil
	}
	o, err := get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		o, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting %s %s/%s: %w", kind, namespace, name, err)
	}
	cache[name] = o
	return o, nil
}

func (r *podRefs) secretKey(ctx context.Context, sel *corev1.SecretKeySelector) (string, bool, error) {
	optional := sel.Optional != nil && *sel.Optional
	s, err := r.secret(ctx, sel.Name)
	if err != nil {
		return "", false, err
	}
	if s == nil {
		if optional {
			return "", false, nil
		}
		return "", false, configErrorf("secret %q not found", sel.Name)
	}
	v, ok := s.Data[sel.Key]
	if !ok {
		if sv, sok := s.StringData[sel.Key]; sok { // only set on objects never stored, kept for fakes
			return sv, true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, configErrorf("couldn't find key %s in Secret %s/%s", sel.Key, r.namespace, sel.Name)
	}
	return string(v), true, nil
}

func (r *podRefs) configMapKey(ctx context.Context, sel *corev1.ConfigMapKeySelector) (string, bool, error) {
	optional := sel.Optional != nil && *sel.Optional
	c, err := r.configMap(ctx, sel.Name)
	if err != nil {
		return "", false, err
	}
	if c == nil {
		if optional {
			return "", false, nil
		}
		return "", false, configErrorf("configmap %q not found", sel.Name)
	}
	if v, ok := c.Data[sel.Key]; ok {
		return v, true, nil
	}
	if v, ok := c.BinaryData[sel.Key]; ok {
		return string(v), true, nil
	}
	if optional {
		return "", false, nil
	}
	return "", false, configErrorf("couldn't find key %s in ConfigMap %s/%s", sel.Key, r.namespace, sel.Name)
}

// podInfo is what fieldRef and resourceFieldRef selectors read besides the
// pod object: the addresses the agent gave it and its node's allocatable
// resources (the kubelet's default for unset limits).
type podInfo struct {
	pod         *corev1.Pod
	podIP       string
	hostIP      string
	allocatable corev1.ResourceList
}

// fieldValue resolves a downward API field path.
func (p *podInfo) fieldValue(path string) (string, error) {
	m := &p.pod.ObjectMeta
	switch path {
	case "metadata.name":
		return m.Name, nil
	case "metadata.namespace":
		return m.Namespace, nil
	case "metadata.uid":
		return string(m.UID), nil
	case "metadata.labels":
		return formatMap(m.Labels), nil
	case "metadata.annotations":
		return formatMap(m.Annotations), nil
	case "spec.nodeName":
		return p.pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return p.podIP, nil
	case "status.hostIP", "status.hostIPs":
		return p.hostIP, nil
	}
	for prefix, values := range map[string]map[string]string{"metadata.labels": m.Labels, "metadata.annotations": m.Annotations} {
		if k, ok := strings.CutPrefix(path, prefix+"['"); ok {
			if k, ok := strings.CutSuffix(k, "']"); ok {
				return values[k], nil
			}
		}
	}
	return "", fmt.Errorf("unsupported field path %q", path)
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}

// resourceValue resolves a resourceFieldRef against container c, rounding up
// to the divisor like the kubelet. Unset limits default to the node's
// allocatable resources.
func (p *podInfo) resourceValue(sel *corev1.ResourceFieldSelector, c *corev1.Container) (string, error) {
	if sel.ContainerName != "" {
		c = findContainer(p.pod, sel.ContainerName)
		if c == nil {
			return "", fmt.Errorf("resourceFieldRef names unknown container %q", sel.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(sel.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", sel.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok && kind == "limits" {
		q, ok = p.allocatable[corev1.ResourceName(name)]
	}
	if !ok {
		q = resource.Quantity{}
	}
	divisor := sel.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// containerEnv builds container c's environment on top of base: envFrom
// first, then env, each value expanded against what came before it, as the
// kubelet does.
func containerEnv(ctx context.Context, refs *podRefs, info *podInfo, c *corev1.Container, base *envList) (*envList, error) {
	env := &envList{}
	for _, n := range base.names {
		env.set(n, base.vals[n])
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := refs.configMap(ctx, from.ConfigMapRef.Name)
			if err != nil {
				return nil, err
			}
			if cm == nil {
				if from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
					continue
				}
				return nil, configErrorf("configmap %q not found", from.ConfigMapRef.Name)
			}
			for _, k := range sortedKeys(cm.Data) {
				env.set(from.Prefix+k, cm.Data[k])
			}
		case from.SecretRef != nil:
			s, err := refs.secret(ctx, from.SecretRef.Name)
			if err != nil {
				return nil, err
			}
			if s == nil {
				if from.SecretRef.Optional != nil && *from.SecretRef.Optional {
					continue
				}
				return nil, configErrorf("secret %q not found", from.SecretRef.Name)
			}
			for _, k := range sortedKeys(s.Data) {
				env.set(from.Prefix+k, string(s.Data[k]))
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env.set(e.Name, expand(e.Value, env.lookup))
			continue
		}
		var (
			v   string
			ok  = true
			err error
		)
		switch f := e.ValueFrom; {
		case f.FieldRef != nil:
			v, err = info.fieldValue(f.FieldRef.FieldPath)
		case f.ResourceFieldRef != nil:
			v, err = info.resourceValue(f.ResourceFieldRef, c)
		case f.SecretKeyRef != nil:
			v, ok, err = refs.secretKey(ctx, f.SecretKeyRef)
		case f.ConfigMapKeyRef != nil:
			v, ok, err = refs.configMapKey(ctx, f.ConfigMapKeyRef)
		default:
			err = fmt.Errorf("unsupported valueFrom in env %s", e.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("resolving env %s of container %s: %w", e.Name, c.Name, err)
		}
		if ok {
			env.set(e.Name, v)
		}
	}
	return env, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// baseEnv is every container's environment before its own variables.
func (a *Agent) baseEnv(pod *corev1.Pod, dir string) *envList {
	env := &envList{}
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	env.set("PATH", path)
	env.set("HOME", dir)
	host := pod.Spec.Hostname
	if host == "" {
		host = pod.Name
	}
	env.set("HOSTNAME", host)
	if h, p, err := net.SplitHostPort(a.cfg.APIServer); err == nil {
		env.set("KUBERNETES_SERVICE_HOST", h)
		env.set("KUBERNETES_SERVICE_PORT", p)
		env.set("KUBERNETES_SERVICE_PORT_HTTPS", p)
		env.set("KUBERNETES_PORT", "tcp://"+net.JoinHostPort(h, p))
	}
	for _, kv := range a.cfg.Env {
		k, v, _ := cutEnv(kv)
		env.set(k, v)
	}
	return env
}
