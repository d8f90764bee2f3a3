package podspec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// BuildExecutorPod builds the pod of executor id: a deep copy of the pod
// template (or an empty pod) to which [ExecutorSteps] add their features
// in order. It does not change c, so concurrent builds are safe. Create
// the claims of [OnDemandClaims] with the pod.
func BuildExecutorPod(c *ExecutorConf, id executorid.ID) (*corev1.Pod, error) {
	return buildPod(c, id, ExecutorSteps())
}

// ExecutorSizingPod is an executor pod with only the steps that decide its
// size and placement (basic, mount-volumes, local-dirs): what a YuniKorn
// gang's task group reserves.
func ExecutorSizingPod(c *ExecutorConf) (*corev1.Pod, error) {
	return buildPod(c, 1, []Step{basicStep{}, mountVolumesStep{}, localDirsStep{}})
}

func buildPod(c *ExecutorConf, id executorid.ID, steps []Step) (*corev1.Pod, error) {
	if c == nil {
		return nil, errors.New("building executor pod: no configuration")
	}
	if id < 0 {
		return nil, fmt.Errorf("building executor pod: invalid executor id %d", id)
	}
	pod := &corev1.Pod{}
	if c.Template != nil {
		pod = c.Template.DeepCopy()
	}
	for _, s := range steps {
		if err := s.Configure(pod, c, id); err != nil {
			return nil, fmt.Errorf("building executor pod %d: step %s: %w", id, s.Name(), err)
		}
	}
	restrictContainers(pod)
	if err := checkPod(pod, c); err != nil {
		return nil, fmt.Errorf("building executor pod %d: %w", id, err)
	}
	return pod, nil
}

// restrictContainers gives every container of pod, the template's sidecars
// and init containers too, what the restricted Pod Security profile
// requires and the container leaves unset: no privilege escalation, all
// capabilities dropped, a non-root user and the RuntimeDefault seccomp
// profile (those two unless the pod sets them for all). What a template
// sets explicitly stays: a namespace that enforces the profile then
// rejects the pod with the API server's reason.
func restrictContainers(pod *corev1.Pod) {
	psc := pod.Spec.SecurityContext
	podNonRoot := psc != nil && psc.RunAsNonRoot != nil
	podSeccomp := psc != nil && psc.SeccompProfile != nil
	restrict := func(c *corev1.Container) {
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		sc := c.SecurityContext
		if sc.AllowPrivilegeEscalation == nil {
			sc.AllowPrivilegeEscalation = ptr.To(false)
		}
		if sc.Capabilities == nil {
			sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		}
		if sc.RunAsNonRoot == nil && !podNonRoot {
			sc.RunAsNonRoot = ptr.To(true)
		}
		if sc.SeccompProfile == nil && !podSeccomp {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		}
	}
	for i := range pod.Spec.InitContainers {
		restrict(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		restrict(&pod.Spec.Containers[i])
	}
}

// checkPod reports what the API server would reject on every executor pod
// and what the steps could collide on: duplicate volume names and
// duplicate mount paths in the executor container.
func checkPod(pod *corev1.Pod, c *ExecutorConf) error {
	var errs []error
	seen := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if seen[v.Name] {
			errs = append(errs, fmt.Errorf("two volumes are named %s (from the pod template, "+
				"spark.kubernetes.executor.volumes.*, secrets or local directories)", v.Name))
		}
		seen[v.Name] = true
	}
	if ctr := findContainer(pod, c.ContainerName); ctr != nil {
		paths := map[string]bool{}
		for _, m := range ctr.VolumeMounts {
			if paths[m.MountPath] {
				errs = append(errs, fmt.Errorf("two volumes are mounted at %s in container %s", m.MountPath, ctr.Name))
			}
			paths[m.MountPath] = true
		}
	}
	return errors.Join(errs...)
}

// OnDemandClaims returns the PersistentVolumeClaims to create with pod, the
// pod of executor id built from c: one per volume with
// options.claimName=OnDemand, named <pod>-pvc-<i>, with access mode
// ReadWriteOncePod. As with Spark's spark.kubernetes.driver.ownPersistentVolumeClaim
// (default true), the driver pod owns them when there is one; drover does
// not reuse claims yet, so they last until the driver pod is deleted
// (client mode: until the backend deletes them by the spark-app-selector
// label).
func OnDemandClaims(c *ExecutorConf, pod *corev1.Pod, id executorid.ID) []*corev1.PersistentVolumeClaim {
	var claims []*corev1.PersistentVolumeClaim
	for i, v := range c.Volumes {
		if v.Claim == nil {
			continue
		}
		labels := cloneMap(v.Claim.Labels)
		labels[snapshot.LabelAppID] = c.AppID
		labels[snapshot.LabelExecutorID] = id.String()
		pvc := &corev1.PersistentVolumeClaim{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{
				Name:        claimName(pod.Name, i),
				Namespace:   c.Namespace,
				Labels:      labels,
				Annotations: maps.Clone(v.Claim.Annotations),
			},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: v.Claim.Size.DeepCopy()},
				},
			},
		}
		if len(pvc.Annotations) == 0 {
			pvc.Annotations = nil
		}
		if v.Claim.StorageClass != "" {
			pvc.Spec.StorageClassName = ptr.To(v.Claim.StorageClass)
		}
		if c.DriverPod != nil {
			pvc.OwnerReferences = []metav1.OwnerReference{OwnerReference(c.DriverPod)}
		}
		claims = append(claims, pvc)
	}
	return claims
}

// ExecutorConfigMap builds the executor ConfigMap named c.ConfigMapName
// (nil when it is ""): conf as spark-defaults.conf, which executors read
// from ConfDir before they reach the driver (the driver sends the whole
// configuration when they register). conf holds no sensitive entry:
// k8sconf.ExecutorConfig left out the values of secret keys and of keys
// or values that spark.redaction.regex matches (the executor gets the
// authentication secret from its environment). The ConfigMap is
// immutable, labelled with the application id and the executor role, and
// owned by the driver pod when there is one.
func ExecutorConfigMap(c *ExecutorConf, conf map[string]string) *corev1.ConfigMap {
	if c.ConfigMapName == "" {
		return nil
	}
	text := properties("# Configuration of the executors of "+c.AppID+", written by the driver.", conf)
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: c.objectMeta(c.ConfigMapName),
		Immutable:  ptr.To(true),
		Data:       map[string]string{DefaultsFile: text},
	}
	if c.DriverPod != nil {
		cm.OwnerReferences = []metav1.OwnerReference{OwnerReference(c.DriverPod)}
	}
	return cm
}

// objectMeta is the metadata of an object of the executors': its name, the
// executors' namespace, and the application and executor-role labels.
func (c *ExecutorConf) objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: c.Namespace,
		Labels:    map[string]string{snapshot.LabelAppID: c.AppID, snapshot.LabelRole: snapshot.RoleExecutor},
	}
}

// ExecutorAuthSecret builds the Secret that carries the executors'
// credentials and sensitive variables (nil when they have neither:
// authentication off): keys AuthSecretKey, TLSKey and EnvSecretPrefix+name,
// immutable, owned by the driver pod when there is one. Create it before
// the first executor pod.
func ExecutorAuthSecret(c *ExecutorConf) *corev1.Secret {
	if c.Credentials.IsZero() && len(c.SensitiveEnv) == 0 || c.AuthSecretName == "" {
		return nil
	}
	data := map[string][]byte{}
	for _, k := range credentialKeys(c.Credentials) {
		data[k.key] = k.value
	}
	for k, v := range c.SensitiveEnv {
		data[EnvSecretPrefix+k] = []byte(v)
	}
	s := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: c.objectMeta(c.AuthSecretName),
		Immutable:  ptr.To(true),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	if c.DriverPod != nil {
		s.OwnerReferences = []metav1.OwnerReference{OwnerReference(c.DriverPod)}
	}
	return s
}

// escapeProperty escapes s for a java.util.Properties file (the format of
// spark-defaults.conf): backslashes, line breaks, tabs and form feeds; in
// keys also the separators and white space; at the start of a key, the
// comment characters.
func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\f':
			b.WriteString(`\f`)
		case '=', ':', ' ':
			if key || (r == ' ' && i == 0) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case '#', '!':
			if key && i == 0 {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// properties renders conf in the properties format under a comment
// header, in key order.
func properties(header string, conf map[string]string) string {
	var b strings.Builder
	b.WriteString(header + "\n")
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		b.WriteString(escapeProperty(k, true))
		b.WriteByte('=')
		b.WriteString(escapeProperty(conf[k], false))
		b.WriteByte('\n')
	}
	return b.String()
}

// credentialKey is one credential: its key in the Secret, the executor's
// variable it is read into, and its value.
type credentialKey struct {
	key, env string
	value    []byte
}

// credentialKeys lists the credentials c holds, in a fixed order.
func credentialKeys(c Credentials) []credentialKey {
	var out []credentialKey
	if c.Secret != "" {
		out = append(out, credentialKey{AuthSecretKey, envvar.AuthSecret, []byte(c.Secret)})
	}
	if len(c.TLS) > 0 {
		out = append(out, credentialKey{TLSKey, envvar.TLS, c.TLS})
	}
	return out
}
