package podspec

import (
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/executorid"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Names and places shared by the steps.
const (
	// ExecutorContainerName is the executor's container, unless a pod
	// template names its own (Spark's name).
	ExecutorContainerName = "spark-kubernetes-executor"
	// ConfVolumeName is the volume of the executor ConfigMap.
	ConfVolumeName = "drover-conf-volume-exec"
	// ConfDir is where the executor ConfigMap is mounted; the executor's
	// $DROVER_CONF_DIR.
	ConfDir = "/opt/drover/conf"
	// LocalDirVolumePrefix names the volumes that hold local directories
	// (Spark's): a user volume with this prefix replaces the emptyDir ones.
	LocalDirVolumePrefix = "spark-local-dir-"
	// DefaultLocalDir is the executors' local directory when
	// spark.local.dir is not set.
	DefaultLocalDir = "/var/data/drover"
	// AuthSecretKey is the key of the authentication secret in the Secret
	// built by [ExecutorAuthSecret].
	AuthSecretKey = "auth-secret"
	// TLSKey is the key of the executors' TLS bundle (the application's CA
	// certificate, their certificate and key; PEM) in that Secret.
	TLSKey = "tls.pem"
	// OnDemandClaim as a volume's options.claimName creates a claim per
	// executor.
	OnDemandClaim = "OnDemand"
	// ClaimExecutorID in a claim name is replaced by the executor id
	// (Spark's placeholder).
	ClaimExecutorID = "SPARK_EXECUTOR_ID"
	// ValueAppID and ValueExecutorID in the values of executor labels and
	// annotations are replaced by the application and executor ids
	// (Spark's placeholders).
	ValueAppID      = "{{APP_ID}}"
	ValueExecutorID = "{{EXECUTOR_ID}}"
	// EnvLocalDirs carries the local directories to the executor, as in
	// Spark; it is the environment variable of spark.local.dir.
	EnvLocalDirs = "SPARK_LOCAL_DIRS"
	// AnnotationExecutorsHeld on the driver pod says what holds executors
	// back ("4 held back by ResourceQuota pods3"), for drover submit's
	// status line; the driver sets it while a cap lasts.
	AnnotationExecutorsHeld = "drover.io/executors-held"
)

const (
	maxLabelLength = 63
	execInfix      = "-exec-"
	// defaultPrefixMax keeps <prefix>-exec-<id> a valid host name (63
	// characters) for ids of up to 5 digits.
	defaultPrefixMax = maxLabelLength - len(execInfix) - 5
	// appIDPartLength is how much of the application id the default prefix
	// carries, so that two runs of one application never share pod names.
	appIDPartLength = 8
)

// sanitize turns s into a DNS-1123 label of at most n characters: lower
// case, runs of other characters than letters and digits become one '-',
// no '-' at either end. It may return "".
func sanitize(s string, n int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	out := b.String()
	if len(out) > n {
		out = out[:n]
	}
	return strings.TrimRight(out, "-")
}

// appIDPart is the distinctive part of an application id: drover's
// "drover-<hex>" (and Spark's "spark-<hex>") without the prefix, made
// DNS-safe.
func appIDPart(appID string) string {
	id := appID
	for _, p := range []string{"drover-", "spark-"} {
		if rest, ok := strings.CutPrefix(id, p); ok && rest != "" {
			id = rest
			break
		}
	}
	if s := sanitize(id, 40); s != "" {
		return s
	}
	return "app"
}

// DefaultPodNamePrefix derives the executor pod name prefix from the
// application name and id: "<name>-<8 characters of the id>", short
// enough for the pod names to be valid host names.
func DefaultPodNamePrefix(appName, appID string) string {
	idPart := appIDPart(appID)
	if len(idPart) > appIDPartLength {
		idPart = idPart[:appIDPartLength]
	}
	name := sanitize(appName, defaultPrefixMax-len(idPart)-1)
	if name == "" {
		name = "drover"
	}
	return name + "-" + idPart
}

// DriverNames are the names of an application's driver pod, its headless
// Service and its ConfigMap.
func DriverNames(appName, appID string) (pod, service, configMap string) {
	prefix := DefaultPodNamePrefix(appName, appID)
	pod = prefix + "-driver"
	service = prefix + "-driver-svc"
	if len(service) > maxLabelLength {
		service = "drover-" + appIDPart(appID) + "-driver-svc"
	}
	return pod, service, "drover-drv-" + appIDPart(appID) + "-conf-map"
}

// appNameLabel is the value of the spark-app-name label.
func appNameLabel(appName string) string {
	if v := sanitize(appName, maxLabelLength); v != "" {
		return v
	}
	return "drover"
}

// ExecutorPodName is the name of executor id's pod: <prefix>-exec-<id>.
func ExecutorPodName(prefix string, id executorid.ID) string {
	return prefix + execInfix + id.String()
}

// hostname is the pod's host name when its name is too long to be one:
// the last 63 characters, starting with a letter or digit, with dots
// replaced. "" means the pod name is usable as it is.
func hostname(podName string) string {
	if len(podName) <= maxLabelLength {
		return ""
	}
	h := strings.ReplaceAll(podName[len(podName)-maxLabelLength:], ".", "-")
	return strings.TrimLeft(h, "-")
}

// ConfigMapName is the name of the executor ConfigMap of an application.
func ConfigMapName(appID string) string {
	return "drover-exec-" + appIDPart(appID) + "-conf-map"
}

// AuthSecretName is the name of the Secret that [ExecutorAuthSecret]
// builds for an application.
func AuthSecretName(appID string) string {
	return "drover-exec-" + appIDPart(appID) + "-auth"
}

// claimName is the name of an on-demand claim: <pod>-pvc-<i>, where i is
// the volume's index in ExecutorConf.Volumes (Spark's naming).
func claimName(podName string, i int) string {
	return podName + "-pvc-" + strconv.Itoa(i)
}

// Substitute replaces Spark's {{APP_ID}} and {{EXECUTOR_ID}} in a label or
// annotation value.
func Substitute(v, appID string, id executorid.ID) string {
	if !strings.Contains(v, "{{") {
		return v
	}
	return strings.NewReplacer(ValueAppID, appID, ValueExecutorID, id.String()).Replace(v)
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
