package submit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/authconf"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/client"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/queueapi"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/settings"
	"github.com/drover-project/drover/internal/ui"
)

// Plan is a checked cluster-mode submission: what Create will create.
type Plan struct {
	AppID     string
	Namespace string
	Master    master.URL
	Driver    *podspec.DriverConf
	Pod       *corev1.Pod
	// DriverProperties is the driver's configuration, written to its
	// config map.
	DriverProperties map[string]string
	// DriverFiles are the other files of its config map: the executor pod
	// template read here, which the driver cannot read on this machine.
	DriverFiles map[string]string
	// DriverSecrets are the settings kept out of the config map: those
	// spark.redaction.regex or a secret key marks (tokens, passwords,
	// spark.authenticate.secret, spark.hadoop.*secret*, the UI's token
	// drover.ui.token, spark.executorEnv.DB_PASSWORD), written to the
	// driver's Secret when there are any.
	DriverSecrets map[string]string
	// DriverSecretFiles are the credential files read here
	// (k8sconf.DriverCredentialFiles), shipped in the same Secret.
	DriverSecretFiles map[string][]byte
	// PodGroup is the application's Volcano PodGroup (nil unless
	// spark.kubernetes.scheduler.name=volcano), created before the driver
	// pod that names it and then owned by it.
	PodGroup *unstructured.Unstructured
}

// ID is the submission id, namespace:driver-pod.
func (p *Plan) ID() string { return p.Namespace + ":" + p.Pod.Name }

// Resource turns the application resource into the binary's path in the
// image: local:///path is /path; an absolute path is taken as it is.
func Resource(res string) (string, error) {
	switch {
	case res == "":
		return "", errors.New("no application resource: expected local:///path/to/binary (its path in the image)")
	case strings.HasPrefix(res, "local://"):
		p := strings.TrimPrefix(res, "local://")
		if !strings.HasPrefix(p, "/") || p == "/" {
			return "", fmt.Errorf("application resource %q: expected local:///absolute/path/in/the/image", res)
		}
		return p, nil
	case strings.HasPrefix(res, "/"):
		return res, nil
	case strings.Contains(res, "://"):
		return "", fmt.Errorf("application resource %q: drover does not upload files; expected local:///path/in/the/image", res)
	default:
		return "", fmt.Errorf("application resource %q: expected local:///path/in/the/image (an absolute path)", res)
	}
}

// keysNotForDriver are the submitter's own settings, which the driver must
// not inherit.
var keysNotForDriver = []string{
	"spark.kubernetes.authenticate.submission.", "spark.kubernetes.authenticate.oauth", "spark.kubernetes.authenticate.client",
	"spark.kubernetes.authenticate.caCertFile", config.KubernetesContext.Key(), config.DriverHost.Key(),
	// The driver gets the list in its master URL (driverMaster).
	config.KubernetesAPIServerHost.Key(),
}

// Prepare checks a cluster-mode submission of resource (see [Resource])
// with args, configured by conf, and builds the driver's objects. It talks
// to no API server: an error here means nothing was created. appID is the
// application's id (spark.app.id when set, else a new one).
func Prepare(conf *config.Conf, resource string, args []string, newAppID func() string) (*Plan, error) {
	bin, err := Resource(resource)
	if err != nil {
		return nil, err
	}
	m, err := master.Parse(config.Master.Get(conf))
	if err != nil {
		return nil, err
	}
	if m.Kind != master.Kubernetes {
		return nil, fmt.Errorf("cluster mode needs a Kubernetes master (--master k8s://https://host:port), not %s", m.Raw)
	}
	apis, err := k8sconf.APIServers(conf, m)
	if err != nil {
		return nil, err
	}
	if _, err := settings.ReadKeptLogs(conf); err != nil {
		return nil, err
	}
	m.APIServer, m.APIServers = apis[0], apis
	driverMaster, err := driverMasterURL(conf, apis)
	if err != nil {
		return nil, err
	}
	if !config.AppName.IsSet(conf) {
		// The binary's name, not drover's.
		conf = conf.Clone().Set(config.AppName.Key(), path.Base(bin))
	}
	appID := config.AppID.Get(conf)
	if appID == "" {
		appID = newAppID()
	}
	if config.UIEnabled.Get(conf) && config.UIRequireToken.Get(conf) && !config.UIToken.IsSet(conf) {
		// The UI's token reaches the driver in its Secret, like the
		// other secret entries, and drover ui reads it there.
		conf = conf.Clone().Set(config.UIToken.Key(), ui.NewToken())
	}
	// The driver's settings and those of the executor pods it will create,
	// checked here with the functions the driver uses: every problem in one
	// error, before any object exists.
	dc, err := k8sconf.DriverConf(conf, appID, []string{bin}, args)
	var pod *corev1.Pod
	var props, secrets map[string]string
	var secretFiles map[string][]byte
	if err == nil {
		props, secrets = driverProperties(conf, dc, driverMaster)
		secretFiles, err = credentialFiles(conf, props)
	}
	if err == nil && dc.RestartPolicy == corev1.RestartPolicyOnFailure {
		err = restartCredentials(conf, appID, m, secrets, secretFiles)
	}
	if err == nil {
		if len(secrets)+len(secretFiles)+len(dc.SensitiveEnv) > 0 {
			dc.SecretName = podspec.DriverSecretName(appID)
		}
		pod, err = podspec.BuildDriverPod(dc)
	}
	if err := errors.Join(err, k8sconf.CheckConf(conf, appID, pod)); err != nil {
		return nil, err
	}
	// Checked by CheckConf above.
	pg, err := k8sconf.VolcanoPodGroup(conf, appID, true)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	if f := config.KubernetesExecutorPodTemplateFile.Get(conf); f != "" {
		text, err := k8sconf.ReadExecutorTemplate(f)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", config.KubernetesExecutorPodTemplateFile.Key(), f, err)
		}
		files[podspec.ExecutorTemplateKey] = text
		props[config.KubernetesExecutorPodTemplateFile.Key()] = podspec.ExecutorTemplateFile
	}
	return &Plan{AppID: appID, Namespace: dc.Namespace, Master: m, Driver: dc, Pod: pod, DriverProperties: props,
		DriverFiles: files, DriverSecrets: secrets, DriverSecretFiles: secretFiles, PodGroup: pg}, nil
}

// restartCredentials makes the credentials of a driver that may restart
// in its pod, once, into its Secret: every attempt then proves itself with
// the same, so the executors an attempt started are known to the next. A
// shared secret joins the sensitive settings, certificates the files
// (k8sconf.ReadCredentials); the certificate authority's key is dropped
// here, before anything is created.
func restartCredentials(conf *config.Conf, appID string, m master.URL, secrets map[string]string, files map[string][]byte) error {
	o, err := authconf.Security(conf, m)
	if err != nil {
		return err
	}
	c, err := master.NewCredentials(appID, o, m, time.Now(), slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	if c.Secret != "" {
		secrets[config.AuthenticateSecret.Key()] = c.Secret
	}
	maps.Copy(files, k8sconf.CredentialFiles(c))
	return nil
}

// credentialFiles reads the driver's credential files named in conf on
// this machine (the driver cannot read them there) and points props at
// their copies in the driver's Secret.
func credentialFiles(conf *config.Conf, props map[string]string) (map[string][]byte, error) {
	files := map[string][]byte{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(k8sconf.DriverCredentialFiles)) {
		e := k8sconf.DriverCredentialFiles[name]
		f := e.Get(conf)
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%s: %w", e.Key(), f, err))
			continue
		}
		files[name] = b
		props[e.Key()] = path.Join(podspec.DriverSecretDir, name)
	}
	return files, errors.Join(errs...)
}

// driverMasterURL is the cluster-mode driver's master URL:
// spark.kubernetes.driver.master (the kubernetes Service, which spreads
// across the API servers), followed, when the user listed several API
// servers, by that list, so that the driver fails over without the
// Service too.
func driverMasterURL(conf *config.Conf, apis []string) (string, error) {
	key := config.KubernetesDriverMaster
	list := []string{key.Get(conf)}
	if len(apis) > 1 {
		first, err := master.ParseAPIServers(list[0])
		if err != nil {
			return "", config.Invalid(fmt.Errorf("%s=%s: %w", key.Key(), list[0], err))
		}
		list = first
		for _, a := range apis {
			if !slices.Contains(list, a) {
				list = append(list, a)
			}
		}
	}
	u := "k8s://" + strings.Join(list, ",")
	if _, err := master.Parse(u); err != nil {
		return "", config.Invalid(fmt.Errorf("%s=%s with the API servers %s: %w", key.Key(), key.Get(conf), strings.Join(apis, ","), err))
	}
	return u, nil
}

// driverProperties is the driver's configuration: what was set, without
// the submitter's own settings, with what drover submit decided; split
// into what goes into the config map and the sensitive rest (see
// Plan.DriverSecrets).
func driverProperties(conf *config.Conf, dc *podspec.DriverConf, driverMaster string) (props, secrets map[string]string) {
	props = conf.Explicit()
	for k := range props {
		for _, drop := range keysNotForDriver {
			if strings.HasPrefix(k, drop) {
				delete(props, k)
			}
		}
	}
	maps.Copy(props, map[string]string{
		config.AppID.Key():                   dc.AppID,
		config.AppName.Key():                 config.AppName.Get(conf),
		config.Master.Key():                  driverMaster,
		config.DeployMode.Key():              "cluster",
		config.KubernetesNamespace.Key():     dc.Namespace,
		config.KubernetesDriverPodName.Key(): dc.PodName,
		config.DriverPort.Key():              strconv.Itoa(dc.Port),
	})
	redacted := conf.Clone()
	for k, v := range props {
		redacted.Set(k, v)
	}
	shown := redacted.Redacted()
	secrets = map[string]string{}
	for k, v := range props {
		if shown[k] != v {
			secrets[k] = v
			delete(props, k)
		}
	}
	return props, secrets
}

// NewClient is the submission client: the API servers of
// spark.kubernetes.apiserver.host or the master URL (else the
// kubeconfig's), with the kubeconfig's credentials or
// spark.kubernetes.authenticate.submission.*. The caller closes it.
func NewClient(conf *config.Conf, m master.URL) (*client.Client, error) {
	o := k8sconf.ClientOptions(conf, config.KubernetesSubmissionAuth, nil)
	apis, err := k8sconf.APIServers(conf, m)
	if err != nil {
		return nil, err
	}
	o.APIServers, o.UserAgent = apis, "drover-submit"
	return client.New(o)
}

// Create creates the driver's config map (and Secret, for sensitive
// settings; and the Volcano PodGroup), the driver pod, then its headless
// service. The configuration
// comes first so the pod never waits for it (which shows as
// CreateContainerConfigError), and is then given the pod as its owner, like
// the service, so deleting the pod deletes everything. When a step fails,
// what was created is deleted.
func (p *Plan) Create(ctx context.Context, cs kubernetes.Interface) (*corev1.Pod, error) {
	pods, cms, secrets := cs.CoreV1().Pods(p.Namespace), cs.CoreV1().ConfigMaps(p.Namespace), cs.CoreV1().Secrets(p.Namespace)
	cleanup := context.WithoutCancel(ctx)
	var undo []func() error // deletes of what was created, last first
	fail := func(err error) (*corev1.Pod, error) {
		for i := len(undo) - 1; i >= 0; i-- {
			if derr := undo[i](); derr != nil && !apierrors.IsNotFound(derr) {
				err = errors.Join(err, fmt.Errorf("cleaning up after the failure: %w", derr))
			}
		}
		return nil, err
	}
	if err := queueapi.CheckQueue(ctx, cs, p.Namespace, p.Driver.Queue); err != nil {
		return nil, err
	}
	if p.Driver.SecretName != "" {
		sec := podspec.DriverSecret(p.Driver, p.DriverSecrets, p.DriverSecretFiles, nil)
		if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			return nil, explain(fmt.Errorf("creating the driver's secret %s: %w", sec.Name, err), p.Namespace, "secrets")
		}
		undo = append(undo, func() error { return secrets.Delete(cleanup, sec.Name, metav1.DeleteOptions{}) })
	}
	if pg := p.PodGroup; pg != nil {
		if err := queueapi.CreatePodGroup(ctx, cs, pg, nil); err != nil {
			return fail(explain(err, p.Namespace, "podgroups.scheduling.volcano.sh"))
		}
		undo = append(undo, func() error { return queueapi.DeletePodGroup(cleanup, cs, p.Namespace, pg.GetName()) })
	}
	cm := podspec.DriverConfigMap(p.Driver, p.DriverProperties, p.DriverFiles, nil)
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fail(explain(fmt.Errorf("creating the driver's config map %s: %w", cm.Name, err), p.Namespace, "configmaps"))
	}
	undo = append(undo, func() error { return cms.Delete(cleanup, cm.Name, metav1.DeleteOptions{}) })
	created, err := pods.Create(ctx, p.Pod, metav1.CreateOptions{})
	if err != nil {
		return fail(explain(fmt.Errorf("creating driver pod %s/%s: %w", p.Namespace, p.Pod.Name, err), p.Namespace, "pods"))
	}
	undo = append(undo, func() error {
		return pods.Delete(cleanup, created.Name, metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationForeground)})
	})
	owner, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{podspec.OwnerReference(created)}}})
	if _, err := cms.Patch(ctx, cm.Name, types.MergePatchType, owner, metav1.PatchOptions{}); err != nil {
		return fail(explain(fmt.Errorf("making the driver pod own its config map %s: %w", cm.Name, err), p.Namespace, "configmaps"))
	}
	if p.Driver.SecretName != "" {
		if _, err := secrets.Patch(ctx, p.Driver.SecretName, types.MergePatchType, owner, metav1.PatchOptions{}); err != nil {
			return fail(explain(fmt.Errorf("making the driver pod own its secret %s: %w", p.Driver.SecretName, err), p.Namespace, "secrets"))
		}
	}
	if pg := p.PodGroup; pg != nil {
		if err := queueapi.OwnPodGroup(ctx, cs, p.Namespace, pg.GetName(), podspec.OwnerReference(created)); err != nil {
			return fail(explain(err, p.Namespace, "podgroups.scheduling.volcano.sh"))
		}
	}
	svc := podspec.DriverService(p.Driver, created)
	if _, err := cs.CoreV1().Services(p.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fail(explain(fmt.Errorf("creating the driver's service %s: %w", svc.Name, err), p.Namespace, "services"))
	}
	return created, nil
}

// RedactedPod is pod for showing: environment values that
// spark.redaction.regex marks (by name or value) are replaced.
func RedactedPod(conf *config.Conf, pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	for _, list := range [][]corev1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range list {
			for j, e := range list[i].Env {
				if e.Value != "" && conf.Sensitive(e.Name, e.Value) {
					list[i].Env[j].Value = config.RedactedValue
				}
			}
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// explain adds what a user can do about common API errors.
func explain(err error, ns, resource string) error {
	var status apierrors.APIStatus
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "error looking up service account"):
		return fmt.Errorf("%w (the driver's service account does not exist: create it with drover rbac --apply --namespace %s, "+
			"then submit with --conf %s=%s, or name an existing one in that key)",
			err, ns, config.KubernetesDriverServiceAccountName.Key(), DefaultServiceAccount)
	case apierrors.IsForbidden(err) && resource != "":
		return fmt.Errorf("%w (the submitting user may not create %s in namespace %s: kubectl auth can-i create %s -n %s tells, a namespace admin can grant it)", err, resource, ns, resource, ns)
	case apierrors.IsNotFound(err) && errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Kind == "namespaces":
		return fmt.Errorf("namespace %s does not exist (spark.kubernetes.namespace): %w", ns, err)
	case isUnreachable(err):
		return fmt.Errorf("cannot reach the Kubernetes API server (check --master or the kubeconfig): %w", err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w (the credentials of the kubeconfig or spark.kubernetes.authenticate.submission.* were refused)", err)
	}
	return err
}

func isUnreachable(err error) bool {
	var ue *url.Error
	var oe *net.OpError
	return errors.As(err, &ue) && errors.As(err, &oe)
}
