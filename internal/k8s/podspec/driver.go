package podspec

import (
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// Names and places of a cluster-mode driver.
const (
	// DriverContainerName is the driver's container, unless a pod template
	// names its own (Spark's name).
	DriverContainerName = "spark-kubernetes-driver"
	// DriverConfVolumeName is the volume of the driver ConfigMap.
	DriverConfVolumeName = "drover-conf-volume-driver"
	// DriverConfDir is where the driver ConfigMap is mounted; the driver
	// reads DriverConfDir/spark-defaults.conf (--properties-file).
	DriverConfDir = "/opt/drover/conf"
	// DriverPortName and DefaultDriverPort are the driver's RPC port
	// (Spark's name and port) unless spark.driver.port is set.
	DriverPortName    = "driver-rpc-port"
	DefaultDriverPort = 7078
	// UIPortName names the web UI's port (spark.ui.port), as Spark does.
	UIPortName = "spark-ui"
	// AnnotationUIToken on the driver pod names the Secret whose
	// DriverSecretKey holds drover.ui.token: the pod's web UI asks for the
	// token, and drover ui reads it there.
	AnnotationUIToken = "drover.io/ui-token-secret"
	// AnnotationMaxRestarts on a driver pod with restartPolicy OnFailure
	// is drover.kubernetes.driver.maxRestarts: the attempt after that many
	// restarts ends the application instead of running it.
	AnnotationMaxRestarts = "drover.io/max-restarts"
	// AnnotationEpoch on the driver pod is the epoch of the newest driver
	// attempt, which claims it at start with the pod's resourceVersion as
	// a precondition. An earlier attempt that finds a newer epoch there,
	// thawed after its successor started, commits nothing.
	AnnotationEpoch = "drover.io/driver-epoch"
	// AnnotationFailed on the driver pod is why the application failed for
	// good: the cause of the last attempt, once restarts are exhausted.
	AnnotationFailed = "drover.io/failed"
)

// DriverConfFile is the properties file the driver container reads.
var DriverConfFile = path.Join(DriverConfDir, DefaultsFile)

// The driver's sensitive settings (credentials, and whatever
// spark.redaction.regex matches) travel in a Secret, not its ConfigMap, as
// Spark's DriverKubernetesCredentialsFeatureStep does for credentials: the
// Secret is mounted at DriverSecretDir and the driver reads
// DriverSecretFile after its properties file.
const (
	DriverSecretVolumeName = "drover-secret-volume-driver"
	DriverSecretDir        = "/opt/drover/secret"
	DriverSecretKey        = "spark-secrets.conf"
)

// DriverSecretFile is the file of the driver's sensitive settings.
var DriverSecretFile = path.Join(DriverSecretDir, DriverSecretKey)

// DriverSecretName is the name of the Secret of an application's driver
// settings.
func DriverSecretName(appID string) string { return "drover-drv-" + appIDPart(appID) + "-secret" }

// DriverSecret holds the driver's sensitive settings as a properties file,
// files, and the values of dc.SensitiveEnv (EnvSecretPrefix+name); like
// the ConfigMap it is immutable and, once the pod exists, owned by it.
func DriverSecret(dc *DriverConf, sensitive map[string]string, files map[string][]byte, driver *corev1.Pod) *corev1.Secret {
	sec := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: dc.objectMeta(dc.SecretName),
		Immutable:  ptr.To(true),
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{DriverSecretKey: []byte(properties(
			"# Sensitive settings of the driver of "+dc.AppID+", written by drover submit.", sensitive))},
	}
	maps.Copy(sec.Data, files)
	for k, v := range dc.SensitiveEnv {
		sec.Data[EnvSecretPrefix+k] = []byte(v)
	}
	if driver != nil {
		sec.OwnerReferences = []metav1.OwnerReference{OwnerReference(driver)}
	}
	return sec
}

// ExecutorTemplateKey is the driver ConfigMap's key for the executor pod
// template that submit read on the submitter's machine; the driver finds
// it at ExecutorTemplateFile, as Spark's driver finds its uploaded one.
const ExecutorTemplateKey = "executor-pod-template.yaml"

// ExecutorTemplateFile is where a cluster-mode driver reads the uploaded
// executor pod template.
var ExecutorTemplateFile = path.Join(DriverConfDir, ExecutorTemplateKey)

// BuildDriverPod builds the driver pod, in Spark's order
// (KubernetesDriverBuilder): from a copy of the pod template (or an empty
// pod), the basic driver step (name, labels spark-app-selector and
// spark-role=driver, image, resources, command, environment, port, a
// restricted securityContext), the service account, then the executor
// steps it shares: mount secrets, env secrets, mount volumes, local dirs;
// last the driver ConfigMap's mount at DriverConfDir.
func BuildDriverPod(dc *DriverConf) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if dc.Template != nil {
		pod = dc.Template.DeepCopy()
	}
	if err := basicDriver(pod, dc); err != nil {
		return nil, fmt.Errorf("building the driver pod: step basic: %w", err)
	}
	if dc.ServiceAccount != "" && pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = dc.ServiceAccount
	}
	view := dc.mountView()
	for _, s := range []Step{mountSecretsStep{}, envSecretsStep{}, mountVolumesStep{}, localDirsStep{}} {
		if err := s.Configure(pod, view, 0); err != nil {
			return nil, fmt.Errorf("building the driver pod: step %s: %w", s.Name(), err)
		}
	}
	ctr := findContainer(pod, dc.ContainerName)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: DriverConfVolumeName,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: dc.ConfigMapName},
		}},
	})
	ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: DriverConfVolumeName, MountPath: DriverConfDir, ReadOnly: true})
	if dc.SecretName != "" {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         DriverSecretVolumeName,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: dc.SecretName}},
		})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: DriverSecretVolumeName, MountPath: DriverSecretDir, ReadOnly: true})
	}
	restrictContainers(pod)
	if err := driverQueue(pod, dc); err != nil {
		return nil, fmt.Errorf("building the driver pod: step queue: %w", err)
	}
	if err := checkPod(pod, view); err != nil {
		return nil, fmt.Errorf("building the driver pod: %w", err)
	}
	return pod, nil
}

func basicDriver(pod *corev1.Pod, dc *DriverConf) error {
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	pod.Name, pod.GenerateName, pod.Namespace = dc.PodName, "", dc.Namespace
	labels := cloneMap(pod.Labels)
	labels[snapshot.LabelAppName] = appNameLabel(dc.AppName)
	maps.Copy(labels, dc.Labels)
	labels[snapshot.LabelAppID] = dc.AppID
	labels[snapshot.LabelRole] = RoleDriver
	pod.Labels = labels
	if len(dc.Annotations) > 0 {
		ann := cloneMap(pod.Annotations)
		maps.Copy(ann, dc.Annotations)
		pod.Annotations = ann
	}
	if dc.UIPort != 0 && dc.UIToken && dc.SecretName != "" {
		ann := cloneMap(pod.Annotations)
		ann[AnnotationUIToken] = dc.SecretName
		pod.Annotations = ann
	}
	if dc.RestartPolicy == corev1.RestartPolicyOnFailure {
		ann := cloneMap(pod.Annotations)
		ann[AnnotationMaxRestarts] = strconv.Itoa(dc.MaxRestarts)
		pod.Annotations = ann
	}
	spec := &pod.Spec
	spec.RestartPolicy = corev1.RestartPolicyNever
	if dc.RestartPolicy != "" {
		spec.RestartPolicy = dc.RestartPolicy
	}
	place(spec, dc.NodeSelector, dc.PullSecrets, dc.SchedulerName)
	ctr := ensureContainer(pod, dc.ContainerName)
	ctr.Image = dc.Image
	ctr.ImagePullPolicy = corev1.PullPolicy(dc.PullPolicy)
	ctr.Command = slices.Clone(dc.Command)
	ctr.Args = append([]string{"--properties-file", DriverConfFile}, dc.Args...)
	// The end of the log is the termination message of a driver that
	// fails, which drover submit shows.
	ctr.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	setContainerResources(ctr, dc.MemoryBytes+dc.OverheadBytes, dc.RequestCores, dc.LimitCores)
	if !slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == DriverPortName }) {
		ctr.Ports = append(ctr.Ports, corev1.ContainerPort{Name: DriverPortName, ContainerPort: int32(dc.Port), Protocol: corev1.ProtocolTCP})
	}
	if dc.UIPort != 0 && !slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == UIPortName }) {
		ctr.Ports = append(ctr.Ports, corev1.ContainerPort{Name: UIPortName, ContainerPort: int32(dc.UIPort), Protocol: corev1.ProtocolTCP})
	}
	env := []corev1.EnvVar{
		fieldEnv(envvar.DriverPodIP, "status.podIP"),
		fieldEnv(envvar.DriverPodName, "metadata.name"),
		fieldEnv(envvar.DriverPodNamespace, "metadata.namespace"),
		fieldEnv(envvar.DriverPodUID, "metadata.uid"),
		fieldEnv(envvar.DriverServiceAccount, "spec.serviceAccountName"),
		// The Go counterparts of the JVM's -Xmx and of the driver's cores.
		{Name: "GOMEMLIMIT", Value: strconv.FormatInt(dc.MemoryBytes, 10)},
		{Name: "GOMAXPROCS", Value: strconv.Itoa(dc.Cores)},
	}
	env = append(env, dc.LogEnv...)
	if len(dc.SensitiveEnv) > 0 && dc.SecretName == "" {
		return fmt.Errorf("sensitive variables of spark.kubernetes.driverEnv.* but no Secret to read them from: set DriverConf.SecretName")
	}
	env = append(env, userEnv(dc.Env, dc.SensitiveEnv, dc.SecretName)...)
	ctr.Env = append(ctr.Env, env...)
	if ctr.SecurityContext == nil {
		ctr.SecurityContext = restrictedSecurityContext()
	}
	return nil
}

// RoleDriver is the spark-role label of the driver pod.
const RoleDriver = "driver"

// DriverService is the driver's headless service (Spark's
// DriverServiceFeatureStep): the driver's RPC port, selecting the driver
// pod by application id and role, owned by the driver pod.
func DriverService(dc *DriverConf, driver *corev1.Pod) *corev1.Service {
	labels := cloneMap(dc.ServiceLabels)
	labels[snapshot.LabelAppID] = dc.AppID
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name: dc.ServiceName, Namespace: dc.Namespace, Labels: labels, Annotations: maps.Clone(dc.ServiceAnnotations),
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{snapshot.LabelAppID: dc.AppID, snapshot.LabelRole: RoleDriver},
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{
				Name: DriverPortName, Port: int32(dc.Port), TargetPort: intstr.FromInt32(int32(dc.Port)), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
	if dc.UIPort != 0 {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: UIPortName, Port: int32(dc.UIPort), TargetPort: intstr.FromInt32(int32(dc.UIPort)), Protocol: corev1.ProtocolTCP,
		})
	}
	if len(svc.Annotations) == 0 {
		svc.Annotations = nil
	}
	if driver != nil {
		svc.OwnerReferences = []metav1.OwnerReference{OwnerReference(driver)}
	}
	return svc
}

// objectMeta is the metadata of an object of the driver's: its name, the
// driver's namespace, and the application and driver-role labels.
func (dc *DriverConf) objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: dc.Namespace,
		Labels:    map[string]string{snapshot.LabelAppID: dc.AppID, snapshot.LabelRole: RoleDriver},
	}
}

// DriverConfigMap holds the driver's resolved configuration, conf, as
// spark-defaults.conf (properties format), and files (name → content, such
// as ExecutorTemplateKey), mounted at DriverConfDir; it is immutable and
// owned by the driver pod.
func DriverConfigMap(dc *DriverConf, conf, files map[string]string, driver *corev1.Pod) *corev1.ConfigMap {
	text := properties("# Configuration of the driver of "+dc.AppID+", written by drover submit.", conf)
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: dc.objectMeta(dc.ConfigMapName),
		Immutable:  ptr.To(true),
		Data:       map[string]string{DefaultsFile: text},
	}
	maps.Copy(cm.Data, files)
	if driver != nil {
		cm.OwnerReferences = []metav1.OwnerReference{OwnerReference(driver)}
	}
	return cm
}

// LocalConfFile returns where a file of the driver's configuration is: file
// itself, unless file is under DriverConfDir or DriverSecretDir and a
// process node (tests) said where it put that volume, which it cannot
// mount at its path.
func LocalConfFile(file string, getenv func(string) string) string {
	for _, m := range []struct{ dir, volume string }{{DriverConfDir, DriverConfVolumeName}, {DriverSecretDir, DriverSecretVolumeName}} {
		rel, ok := strings.CutPrefix(file, m.dir+"/")
		if !ok {
			continue
		}
		name := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(m.volume))
		if dir := getenv(envvar.VolumePrefix + name); dir != "" {
			return filepath.Join(dir, rel)
		}
	}
	return file
}
