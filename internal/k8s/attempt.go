package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/client"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/k8s/podcontrol"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/master"
)

func init() {
	master.RegisterAttempts(master.Kubernetes, driverAttempt)
}

// driverAttempt numbers a cluster-mode driver's attempts when its pod
// restarts it (spark.kubernetes.driver.restartPolicy=OnFailure): the
// process the kubelet starts again in the same pod claims the next epoch
// on the pod, reads the credentials drover submit made for all attempts,
// and, past drover.kubernetes.driver.maxRestarts, ends the application.
func driverAttempt(ctx context.Context, appID string, conf *config.Conf, m master.URL, log *slog.Logger) (master.Attempt, error) {
	if config.KubernetesDriverRestartPolicy.Get(conf) != string(corev1.RestartPolicyOnFailure) {
		return master.Attempt{}, nil
	}
	opts, err := load(conf, m, appID)
	if err != nil {
		return master.Attempt{}, err
	}
	if opts.DriverPodName == "" {
		return master.Attempt{}, fmt.Errorf("%s=OnFailure: the driver does not know its pod (%s)",
			config.KubernetesDriverRestartPolicy.Key(), config.KubernetesDriverPodName.Key())
	}
	cs, err := newClient(appID, m, opts, nil, log)
	if err != nil {
		return master.Attempt{}, err
	}
	defer cs.Close()
	stored, err := k8sconf.ReadCredentials(os.Getenv)
	if err != nil {
		return master.Attempt{}, err
	}
	a, err := claimAttempt(ctx, attemptPod{cs: cs, ns: opts.Namespace, name: opts.DriverPodName, appID: appID,
		maxRestarts: config.KubernetesDriverMaxRestarts.Get(conf), clock: clock.RealClock{}, log: log, endWait: 2 * time.Minute})
	a.Credentials = stored
	return a, err
}

// attemptPod is the driver pod whose attempts are numbered.
type attemptPod struct {
	cs          kubernetes.Interface
	ns, name    string
	appID       string
	maxRestarts int // the configuration's, when the pod carries none
	clock       clock.WithTicker
	log         *slog.Logger
	// endWait bounds the wait of an attempt that ended the application for
	// the kubelet to stop it.
	endWait time.Duration
}

// statusLag bounds the wait for the kubelet to report the restart that
// started this process: the new container runs before its restartCount
// reaches the API server.
const statusLag = 10 * time.Second

// claimAttempt decides this process's epoch, claims it on the pod with
// the pod's resourceVersion as precondition, and returns the attempt,
// fenced by the claim. Past the allowed restarts it ends the application
// (endApplication) and returns an error wrapping master.ErrNoMoreAttempts.
func claimAttempt(ctx context.Context, p attemptPod) (master.Attempt, error) {
	for tries := 0; ; tries++ {
		pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return master.Attempt{}, fmt.Errorf("reading the driver pod %s/%s to number this attempt: %w", p.ns, p.name, err)
		}
		st := driverStatus(pod)
		epoch := nextEpoch(st.RestartCount, claimedEpoch(pod))
		if int64(st.RestartCount) < epoch && tries == 0 {
			// The restart is not reported yet; its cause comes with it.
			pod = p.awaitRestart(ctx, pod, epoch)
			st = driverStatus(pod)
		}
		maxRestarts := p.maxRestarts
		if v, err := strconv.Atoi(pod.Annotations[podspec.AnnotationMaxRestarts]); err == nil && v >= 0 {
			maxRestarts = v
		}
		a := master.Attempt{Epoch: epoch, Restartable: true, Of: maxRestarts + 1, LastCause: lastCause(st)}
		if epoch > int64(maxRestarts) {
			return a, p.endApplication(ctx, a)
		}
		err = p.patch(ctx, pod.ResourceVersion, map[string]any{podspec.AnnotationEpoch: strconv.FormatInt(epoch, 10)}, nil)
		if apierrors.IsConflict(err) && tries < 5 {
			continue // the pod changed meanwhile (its status): decide again
		}
		if err != nil {
			return master.Attempt{}, fmt.Errorf("claiming attempt %d on the driver pod %s/%s: %w", epoch+1, p.ns, p.name, err)
		}
		a.Fence = p.fence(epoch)
		if epoch > 0 {
			p.log.Warn("the driver restarted in its pod", "attempt", epoch+1, "of", a.Of, "cause", a.LastCause)
		}
		return a, nil
	}
}

// nextEpoch is the epoch of a driver process starting in a pod whose
// container restarted restarts times, where claimed is the newest epoch an
// earlier process claimed (-1 for none): the restart count, unless the
// kubelet has not reported this restart yet, when it still equals the
// last claim.
func nextEpoch(restarts int32, claimed int64) int64 {
	return max(int64(restarts), claimed+1)
}

// claimedEpoch is the epoch the pod carries, -1 for none.
func claimedEpoch(pod *corev1.Pod) int64 {
	v, err := strconv.ParseInt(pod.Annotations[podspec.AnnotationEpoch], 10, 64)
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// awaitRestart reads the pod until its driver container's restart count
// reaches epoch, for at most statusLag; the last pod read either way.
func (p attemptPod) awaitRestart(ctx context.Context, pod *corev1.Pod, epoch int64) *corev1.Pod {
	ticker := p.clock.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	deadline := p.clock.Now().Add(statusLag)
	for int64(driverStatus(pod).RestartCount) < epoch && p.clock.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return pod
		case <-ticker.C():
		}
		if next, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, p.name, metav1.GetOptions{}); err == nil {
			pod = next
		}
	}
	return pod
}

// fence returns the check a committing attempt makes: has a newer attempt
// claimed the pod?
func (p attemptPod) fence(epoch int64) func(context.Context) error {
	return func(ctx context.Context) error {
		pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("checking that attempt %d still runs the application: %w", epoch+1, err)
		}
		if c := claimedEpoch(pod); c > epoch {
			return fmt.Errorf("attempt %d stopped: attempt %d claimed driver pod %s/%s: %w", epoch+1, c+1, p.ns, p.name, master.ErrSuperseded)
		}
		return nil
	}
}

// endApplication ends an application whose driver may not restart again:
// it names the cause on the pod, deletes the executors and sets the pod's
// active deadline, past which the kubelet fails the pod for good (a
// restartPolicy cannot change). It waits for the kubelet to stop this
// process, so that no restart races the deadline.
func (p attemptPod) endApplication(ctx context.Context, a master.Attempt) error {
	msg := fmt.Sprintf("the driver failed %d times; the last attempt (%d of %d): %s", a.Of, a.Of, a.Of, a.LastCause)
	// The executors go first: the deadline, once set, is past at once,
	// and the kubelet stops this process.
	err := podcontrol.New(p.cs, p.log).DeletePods(ctx, p.ns, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(
		labels.Set{snapshot.LabelAppID: p.appID, snapshot.LabelRole: snapshot.RoleExecutor}).String()})
	if err == nil {
		// No precondition: the kubelet and the scheduler change the pod's
		// status meanwhile, and these fields are the same whoever writes
		// them.
		err = p.patch(ctx, "", map[string]any{podspec.AnnotationFailed: msg}, map[string]any{"activeDeadlineSeconds": 1})
	}
	if err != nil {
		return fmt.Errorf("%s; ending the application: %w (%w)", msg, err, master.ErrNoMoreAttempts)
	}
	p.log.Error("the application failed: no restart is left", "cause", msg)
	select {
	case <-ctx.Done():
	case <-p.clock.After(p.endWait):
	}
	return fmt.Errorf("%s: %w", msg, master.ErrNoMoreAttempts)
}

// patch merges annotations and spec into the pod; with rv, on the
// condition that the pod is still at that resourceVersion.
func (p attemptPod) patch(ctx context.Context, rv string, annotations, spec map[string]any) error {
	meta := map[string]any{"annotations": annotations}
	if rv != "" {
		meta["resourceVersion"] = rv
	}
	body := map[string]any{"metadata": meta}
	if spec != nil {
		body["spec"] = spec
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = p.cs.CoreV1().Pods(p.ns).Patch(ctx, p.name, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}

// driverStatus is the status of the pod's driver container: the one
// drover submit gave the driver's properties file, else the first.
func driverStatus(pod *corev1.Pod) corev1.ContainerStatus {
	name := ""
	for _, c := range pod.Spec.Containers {
		if len(c.Args) >= 2 && c.Args[0] == "--properties-file" && c.Args[1] == podspec.DriverConfFile {
			name = c.Name
			break
		}
	}
	if name == "" && len(pod.Spec.Containers) > 0 {
		name = pod.Spec.Containers[0].Name
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == name {
			return s
		}
	}
	return corev1.ContainerStatus{Name: name}
}

// lastCause says why the container's previous run ended: "exit 137,
// OOMKilled"; "" when it did not run before.
func lastCause(st corev1.ContainerStatus) string {
	t := st.LastTerminationState.Terminated
	if t == nil {
		if st.RestartCount > 0 {
			return "cause not reported"
		}
		return ""
	}
	s := fmt.Sprintf("exit %d", t.ExitCode)
	if t.Reason != "" {
		s += ", " + t.Reason
	}
	return s
}

// load is k8sconf.Load with the API servers the driver's clients use:
// spark.kubernetes.apiserver.host's, else the master URL's.
func load(conf *config.Conf, m master.URL, appID string) (k8sconf.Options, error) {
	opts, err := k8sconf.Load(conf, appID, os.Getenv)
	if err != nil {
		return k8sconf.Options{}, err
	}
	if opts.Client.APIServers, err = k8sconf.APIServers(conf, m); err != nil {
		return k8sconf.Options{}, err
	}
	return opts, nil
}

// newClient builds the API client of application appID's driver from the
// Kubernetes options' API servers, else the master URL's; wrap, if set,
// wraps its transport. The caller closes it.
func newClient(appID string, m master.URL, opts k8sconf.Options, wrap func(http.RoundTripper) http.RoundTripper, log *slog.Logger) (*client.Client, error) {
	co := opts.Client
	if len(co.APIServers) == 0 {
		co.APIServers = m.Endpoints()
	}
	co.UserAgent, co.WrapTransport, co.Logger = "drover-driver/"+appID, wrap, log
	return client.New(co)
}
