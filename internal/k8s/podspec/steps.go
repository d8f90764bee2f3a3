package podspec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// Step is one feature of an executor pod: it adds what it is responsible
// for to the pod, reading only c. Steps run in order on one pod, starting
// from a copy of the pod template.
type Step interface {
	// Name identifies the step in errors.
	Name() string
	// Configure adds the step's feature to pod, the pod of executor id.
	Configure(pod *corev1.Pod, c *ExecutorConf, id executorid.ID) error
}

// ExecutorSteps returns the executor steps in Spark's order
// (KubernetesExecutorBuilder): basic, credentials (service account), mount
// secrets, env secrets, mount volumes, local dirs; then the executor
// ConfigMap's mount, which Spark does in its basic step, and the queue
// (Spark's VolcanoFeatureStep and its labels for Kueue and YuniKorn),
// last so that it sees the pod's final requests.
func ExecutorSteps() []Step {
	return []Step{basicStep{}, credentialsStep{}, mountSecretsStep{}, envSecretsStep{}, mountVolumesStep{}, localDirsStep{},
		configMapStep{}, queueStep{}}
}

// findContainer returns the container named name in pod, or nil.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// executorContainer returns the executor container of pod, which the basic
// step guarantees.
func executorContainer(pod *corev1.Pod, c *ExecutorConf) (*corev1.Container, error) {
	if ctr := findContainer(pod, c.ContainerName); ctr != nil {
		return ctr, nil
	}
	return nil, fmt.Errorf("the pod has no container %s", c.ContainerName)
}

// basicStep is Spark's BasicExecutorFeatureStep: identity, image,
// resources, environment, command, ownership and scheduling.
//
// Over a template: the name, restartPolicy, image (when configured),
// command (when set), memory request and limit, CPU request, and the
// CPU limit when spark.kubernetes.executor.limit.cores is set are drover's;
// labels, annotations and node selectors are merged (drover's win for the
// same key); pull secrets and environment variables are appended (a later
// variable wins in Kubernetes, so drover's do); the scheduler name is
// drover's when configured; a template's container securityContext is
// kept as it is, otherwise the container gets a restricted one.
type basicStep struct{}

func (basicStep) Name() string { return "basic" }

func (basicStep) Configure(pod *corev1.Pod, c *ExecutorConf, id executorid.ID) error {
	name := ExecutorPodName(c.PodNamePrefix, id)
	idStr := id.String()

	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	pod.Name, pod.GenerateName, pod.Namespace = name, "", c.Namespace
	labels := cloneMap(pod.Labels)
	labels[snapshot.LabelAppName] = appNameLabel(c.AppName)
	for k, v := range c.Labels {
		labels[k] = Substitute(v, c.AppID, id)
	}
	labels[snapshot.LabelAppID] = c.AppID
	labels[snapshot.LabelRole] = snapshot.RoleExecutor
	labels[snapshot.LabelExecutorID] = idStr
	pod.Labels = labels
	if len(c.Annotations) > 0 {
		ann := cloneMap(pod.Annotations)
		for k, v := range c.Annotations {
			ann[k] = Substitute(v, c.AppID, id)
		}
		pod.Annotations = ann
	}
	if c.DriverPod != nil {
		pod.OwnerReferences = append(pod.OwnerReferences, OwnerReference(c.DriverPod))
	}

	spec := &pod.Spec
	spec.RestartPolicy = corev1.RestartPolicyNever
	if h := hostname(name); h != "" {
		spec.Hostname = h
	}
	place(spec, c.NodeSelector, c.PullSecrets, c.SchedulerName)
	spec.TerminationGracePeriodSeconds = ptr.To(c.TerminationGracePeriod)

	ctr := ensureContainer(pod, c.ContainerName)
	ctr.Image = c.Image
	ctr.ImagePullPolicy = corev1.PullPolicy(c.PullPolicy)
	if len(c.Command) > 0 {
		ctr.Command, ctr.Args = slices.Clone(c.Command), nil
	}

	setContainerResources(ctr, c.MemoryBytes+c.OverheadBytes, c.RequestCores, c.LimitCores)

	env := []corev1.EnvVar{
		{Name: envvar.Role, Value: envvar.RoleExecutor},
		{Name: envvar.DriverURL, Value: c.DriverURL},
		{Name: envvar.AppID, Value: c.AppID},
		{Name: envvar.ExecutorID, Value: idStr},
		{Name: envvar.Cores, Value: strconv.Itoa(c.Cores)},
		{Name: envvar.Memory, Value: strconv.FormatInt(c.MemoryBytes, 10)},
		fieldEnv(envvar.PodIP, "status.podIP"),
		fieldEnv(envvar.PodName, "metadata.name"),
	}
	if c.Reconnect {
		env = append(env, corev1.EnvVar{Name: envvar.Reconnect, Value: "true"})
	}
	env = append(env, c.LogEnv...)
	if !c.Credentials.IsZero() && c.AuthSecretName == "" {
		return fmt.Errorf("the executors have credentials but no Secret to read them from: set ExecutorConf.AuthSecretName")
	}
	if len(c.SensitiveEnv) > 0 && c.AuthSecretName == "" {
		return fmt.Errorf("the executors have sensitive variables (spark.executorEnv.*) but no Secret to read them from: set ExecutorConf.AuthSecretName")
	}
	for _, k := range credentialKeys(c.Credentials) {
		env = append(env, corev1.EnvVar{Name: k.env, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: c.AuthSecretName},
				Key:                  k.key,
			},
		}})
	}
	env = append(env, userEnv(c.Env, c.SensitiveEnv, c.AuthSecretName)...)
	ctr.Env = append(ctr.Env, env...)

	if ctr.SecurityContext == nil {
		ctr.SecurityContext = restrictedSecurityContext()
	}
	return nil
}

// restrictedSecurityContext meets the "restricted" Pod Security Standard.
// The root file system is read-only: the executor writes only to its local
// directories (and TMPDIR, which points at the first), which are volumes.
// The image must name a numeric non-root user.
func restrictedSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// cloneMap is a copy of m to add to: never nil.
func cloneMap(m map[string]string) map[string]string {
	if c := maps.Clone(m); c != nil {
		return c
	}
	return map[string]string{}
}

// ensureContainer returns the pod's container name, adding it when the
// pod has none of that name.
func ensureContainer(pod *corev1.Pod, name string) *corev1.Container {
	if ctr := findContainer(pod, name); ctr != nil {
		return ctr
	}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name})
	return &pod.Spec.Containers[len(pod.Spec.Containers)-1]
}

// setContainerResources sets the container's memory request and limit to
// memory bytes, its CPU request, and its CPU limit when there is one.
func setContainerResources(ctr *corev1.Container, memory int64, request resource.Quantity, limit *resource.Quantity) {
	mem := resource.NewQuantity(memory, resource.BinarySI)
	ctr.Resources.Requests = setResource(ctr.Resources.Requests, corev1.ResourceMemory, *mem)
	ctr.Resources.Limits = setResource(ctr.Resources.Limits, corev1.ResourceMemory, *mem)
	ctr.Resources.Requests = setResource(ctr.Resources.Requests, corev1.ResourceCPU, request)
	if limit != nil {
		ctr.Resources.Limits = setResource(ctr.Resources.Limits, corev1.ResourceCPU, *limit)
	}
}

// sortedEnv is the variables of env, sorted by name.
func sortedEnv(env map[string]string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, corev1.EnvVar{Name: k, Value: env[k]})
	}
	return out
}

// setResource returns a copy of l with name set to q, its text cached: a
// quantity formats itself on every protobuf encoding unless its text is
// cached, and one in a map never caches it (encoding reads a copy), so
// every executor pod's create formatted each quantity twice, for the size
// and for the bytes.
func setResource(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) corev1.ResourceList {
	l = maps.Clone(l)
	if l == nil {
		l = corev1.ResourceList{}
	}
	_ = q.String()
	l[name] = q
	return l
}

func fieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: fieldPath},
	}}
}

// OwnerReference makes the driver pod the controller of an object, so
// that deleting the driver pod deletes it (design §4: no orphans).
func OwnerReference(driver *corev1.Pod) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         "v1",
		Kind:               "Pod",
		Name:               driver.Name,
		UID:                driver.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// credentialsStep is Spark's ExecutorKubernetesCredentialsFeatureStep: the
// service account, unless the template names one. Unlike Spark, the API
// token is not mounted unless the executor account was named explicitly
// (or the template decides): by default executors share the driver's
// account, whose token could create and delete the namespace's pods.
type credentialsStep struct{}

func (credentialsStep) Name() string { return "credentials" }

func (credentialsStep) Configure(pod *corev1.Pod, c *ExecutorConf, _ executorid.ID) error {
	if c.ServiceAccount != "" && pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = c.ServiceAccount
	}
	if !c.MountServiceAccountToken && pod.Spec.AutomountServiceAccountToken == nil {
		pod.Spec.AutomountServiceAccountToken = ptr.To(false)
	}
	return nil
}

// mountSecretsStep is Spark's MountSecretsFeatureStep: each Secret of
// spark.kubernetes.executor.secrets.* becomes a volume mounted read-only.
type mountSecretsStep struct{}

func (mountSecretsStep) Name() string { return "mount-secrets" }

func (mountSecretsStep) Configure(pod *corev1.Pod, c *ExecutorConf, _ executorid.ID) error {
	if len(c.Secrets) == 0 {
		return nil
	}
	ctr, err := executorContainer(pod, c)
	if err != nil {
		return err
	}
	for i, s := range c.Secrets {
		name := secretVolumeName(s.Name, i)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         name,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.Name}},
		})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: s.Path, ReadOnly: true})
	}
	return nil
}

// envSecretsStep is Spark's EnvSecretsFeatureStep: environment variables
// from Secret keys.
type envSecretsStep struct{}

func (envSecretsStep) Name() string { return "env-secrets" }

func (envSecretsStep) Configure(pod *corev1.Pod, c *ExecutorConf, _ executorid.ID) error {
	if len(c.SecretEnv) == 0 {
		return nil
	}
	ctr, err := executorContainer(pod, c)
	if err != nil {
		return err
	}
	for _, s := range c.SecretEnv {
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: s.Env, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: s.Secret}, Key: s.Key},
		}})
	}
	return nil
}

// mountVolumesStep is Spark's MountVolumesFeatureStep: the user's volumes,
// with on-demand claims named <pod>-pvc-<i> (see [OnDemandClaims]).
type mountVolumesStep struct{}

func (mountVolumesStep) Name() string { return "mount-volumes" }

func (mountVolumesStep) Configure(pod *corev1.Pod, c *ExecutorConf, id executorid.ID) error {
	if len(c.Volumes) == 0 {
		return nil
	}
	ctr, err := executorContainer(pod, c)
	if err != nil {
		return err
	}
	for i, v := range c.Volumes {
		src := *v.Source.DeepCopy()
		if pvc := src.PersistentVolumeClaim; pvc != nil {
			if v.Claim != nil {
				pvc.ClaimName = claimName(pod.Name, i)
			} else {
				pvc.ClaimName = strings.ReplaceAll(pvc.ClaimName, ClaimExecutorID, id.String())
			}
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: src})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{
			Name: v.Name, MountPath: v.MountPath, SubPath: v.SubPath, SubPathExpr: v.SubPathExpr, ReadOnly: v.ReadOnly,
		})
	}
	return nil
}

// localDirsStep is Spark's LocalDirsFeatureStep: scratch space for shuffle
// and spill. Unless the executor container already mounts volumes named
// spark-local-dir-* (from spark.kubernetes.executor.volumes or the
// template), which then are the local directories, each local directory
// is an emptyDir volume (in memory with spark.kubernetes.local.dirs.tmpfs).
// SPARK_LOCAL_DIRS names them, and TMPDIR is the first, since the root
// file system is read-only.
type localDirsStep struct{}

func (localDirsStep) Name() string { return "local-dirs" }

func (localDirsStep) Configure(pod *corev1.Pod, c *ExecutorConf, _ executorid.ID) error {
	ctr, err := executorContainer(pod, c)
	if err != nil {
		return err
	}
	var dirs []string
	for _, m := range ctr.VolumeMounts {
		if strings.HasPrefix(m.Name, LocalDirVolumePrefix) {
			dirs = append(dirs, m.MountPath)
		}
	}
	if len(dirs) == 0 {
		medium := corev1.StorageMediumDefault
		if c.TmpfsLocalDirs {
			medium = corev1.StorageMediumMemory
		}
		for i, d := range c.LocalDirs {
			name := LocalDirVolumePrefix + strconv.Itoa(i+1)
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
				Name:         name,
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}},
			})
			ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: d})
		}
		dirs = c.LocalDirs
	}
	ctr.Env = append(ctr.Env,
		corev1.EnvVar{Name: EnvLocalDirs, Value: strings.Join(dirs, ",")},
		corev1.EnvVar{Name: "TMPDIR", Value: dirs[0]},
	)
	return nil
}

// configMapStep mounts the executor ConfigMap (see [ExecutorConfigMap]) at
// ConfDir and points DROVER_CONF_DIR at it, so the executor reads its
// spark-defaults.conf before it reaches the driver.
type configMapStep struct{}

func (configMapStep) Name() string { return "config-map" }

func (configMapStep) Configure(pod *corev1.Pod, c *ExecutorConf, _ executorid.ID) error {
	if c.ConfigMapName == "" {
		return nil
	}
	ctr, err := executorContainer(pod, c)
	if err != nil {
		return err
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: ConfVolumeName,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: c.ConfigMapName},
		}},
	})
	ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: ConfVolumeName, MountPath: ConfDir, ReadOnly: true})
	ctr.Env = append(ctr.Env, corev1.EnvVar{Name: envvar.ConfDir, Value: ConfDir})
	return nil
}

// place adds a pod's node selector, image pull secrets (once each) and
// scheduler, over what its template set.
func place(spec *corev1.PodSpec, nodeSelector map[string]string, pullSecrets []string, schedulerName string) {
	if len(nodeSelector) > 0 {
		ns := cloneMap(spec.NodeSelector)
		maps.Copy(ns, nodeSelector)
		spec.NodeSelector = ns
	}
	for _, s := range pullSecrets {
		if !slices.ContainsFunc(spec.ImagePullSecrets, func(r corev1.LocalObjectReference) bool { return r.Name == s }) {
			spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
	}
	if schedulerName != "" {
		spec.SchedulerName = schedulerName
	}
}
