package k8s

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dynalloc"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s/allocator"
	"github.com/drover-project/drover/internal/k8s/client"
	"github.com/drover-project/drover/internal/k8s/lifecycle"
	"github.com/drover-project/drover/internal/k8s/podsource"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/scheduler"
)

func init() {
	master.RegisterClusterManager(master.Kubernetes, newCluster)
}

// Cluster is the Kubernetes cluster manager of one application: the
// coarse-grained backend executors register with, the allocator that
// creates their pods, the lifecycle manager that turns pod states into
// executor removals, and the one informer that feeds both.
type Cluster struct {
	app   master.App
	conf  *config.Conf
	log   *slog.Logger
	clock clock.WithTicker

	cs        kubernetes.Interface
	ns        string
	selector  labels.Selector
	backend   *coarse.Backend
	alloc     *allocator.Allocator
	execConf  *podspec.ExecutorConf
	driverPod *corev1.Pod
	initial   int

	src      *podsource.Source
	dirty    chan struct{}
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	// haltOnce stops the allocator the moment the driver decides to stop
	// (signal, job end, failure): no pod is created after that.
	haltOnce  sync.Once
	haltAlloc context.CancelFunc
	allocCtx  context.Context
	lifePtr   atomic.Pointer[lifecycle.Manager]

	mu      sync.Mutex
	waiters map[string][]chan scheduler.LossReason
	// removedByLifecycle marks executors the lifecycle manager removed:
	// their pods are already being handled.
	removedByLifecycle map[string]bool
	created            []string // names of the config map and secret created, for Stop
}

var (
	_ master.Cluster                   = (*Cluster)(nil)
	_ coarse.ClusterManager            = (*Cluster)(nil)
	_ backend.ExecutorAllocationClient = (*Cluster)(nil)
	_ allocator.PodClient              = (*podClient)(nil)
	_ lifecycle.Applier                = (*applier)(nil)
)

// wrapTransport lets benchmarks count the driver's API requests.
var wrapTransport func(http.RoundTripper) http.RoundTripper

// newCluster checks everything that can be checked without the API server,
// so bad configuration fails before anything is created.
func newCluster(app master.App) (master.Cluster, error) {
	c := &Cluster{
		app:                app,
		conf:               app.Conf,
		log:                app.Logger,
		clock:              clock.RealClock{},
		ns:                 config.KubernetesNamespace.Get(app.Conf),
		dirty:              make(chan struct{}, 1),
		waiters:            map[string][]chan scheduler.LossReason{},
		removedByLifecycle: map[string]bool{},
	}
	initial, err := dynalloc.InitialExecutors(app.Conf)
	if err != nil {
		return nil, err
	}
	c.initial = initial
	if c.log == nil {
		c.log = slog.Default()
	}
	logging.RouteKlog(c.log)
	cs, _, err := client.New(client.Options{
		APIServer:     app.Master.APIServer,
		Context:       config.KubernetesContext.Get(app.Conf),
		Auth:          authKeys(app.Conf),
		Conf:          app.Conf,
		UserAgent:     "drover-driver/" + app.ID,
		WrapTransport: wrapTransport,
	})
	if err != nil {
		return nil, err
	}
	c.cs = cs
	c.selector = labels.SelectorFromSet(labels.Set{snapshot.LabelAppID: app.ID, snapshot.LabelRole: snapshot.RoleExecutor})

	ratio := 0.8 // Spark's default for Kubernetes
	if config.MinRegisteredResourcesRatio.IsSet(app.Conf) {
		ratio = config.MinRegisteredResourcesRatio.Get(app.Conf)
	}
	host, bind := driverAddress(app.Conf)
	bo := coarse.ConfOptions(app.ID, app.Conf, app.Auth)
	bo.BindAddress, bo.Port, bo.AdvertiseHost = bind, config.DriverPort.Get(app.Conf), host
	bo.InitialExecutors, bo.MinRegisteredRatio = c.initial, ratio
	bo.Admit, bo.OnExecutorsChanged, bo.Logger = c.admit, c.markDirty, c.log
	c.backend = coarse.New(app.Scheduler, c, bo)
	allocOpts := allocator.Options{
		Policy:              allocator.Policy(config.KubernetesAllocationPolicy.Get(app.Conf)),
		BatchSize:           config.KubernetesAllocationBatchSize.Get(app.Conf),
		BatchDelay:          config.KubernetesAllocationBatchDelay.Get(app.Conf),
		PodCreationTimeout:  max(5*config.KubernetesAllocationBatchDelay.Get(app.Conf), config.KubernetesAllocationExecutorTimeout.Get(app.Conf)),
		ExecutorIdleTimeout: config.DynamicAllocationExecutorIdleTimeout.Get(app.Conf),
		AllocationMaximum:   int64(config.KubernetesAllocationMaximum.Get(app.Conf)),
		CreateConcurrency:   config.KubernetesAllocationCreateConcurrency.Get(app.Conf),
	}
	// Only an explicit cap replaces the adaptive policy's running-based one.
	if config.KubernetesAllocationMaxPendingPods.IsSet(app.Conf) {
		allocOpts.MaxPendingPods = config.KubernetesAllocationMaxPendingPods.Get(app.Conf)
	}
	if err := allocOpts.Validate(); err != nil {
		return nil, err
	}
	c.alloc = allocator.New(allocOpts, &podClient{c}, c.clock, c.log.With("component", "allocator"))
	c.alloc.OnLimit(c.limitChanged)
	c.allocCtx, c.haltAlloc = context.WithCancel(context.Background())
	return c, nil
}

// authKeys are the credentials of this driver: the cluster-mode driver's
// own keys when it runs in its pod, else the client-mode keys.
func authKeys(c *config.Conf) config.AuthKeys {
	if config.KubernetesDriverPodName.Get(c) != "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return config.KubernetesDriverAuth
	}
	return config.KubernetesAuth
}

// driverAddress picks the host executors dial and the address to listen
// on: spark.driver.host (else this pod's IP, else this machine's address)
// and spark.driver.bindAddress (else that host, or every interface when
// the host is not loopback).
func driverAddress(c *config.Conf) (host, bind string) {
	host = config.DriverHost.Get(c)
	if host == "" {
		host = os.Getenv(envvar.DriverPodIP)
	}
	if host == "" {
		host = outboundIP()
	}
	bind = config.DriverBindAddress.Get(c)
	if bind == "" {
		bind = host
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			bind = "0.0.0.0"
		}
	}
	return host, bind
}

// outboundIP is the address this machine uses to reach other hosts; it
// sends no packet.
func outboundIP() string {
	conn, err := net.Dial("udp", "10.255.255.255:9")
	if err != nil {
		return "127.0.0.1"
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP.String()
}

// Backend is the coarse-grained backend executors register with.
func (c *Cluster) Backend() backend.SchedulerBackend { return c.backend }

// Allocation grows and shrinks the executor pods.
func (c *Cluster) Allocation() backend.Scalable { return backend.NewScalable(c, c.backend) }

// Start brings the application's Kubernetes side up in Spark's order:
// initial target, lifecycle manager, allocator, pod source; the executor
// config map is created before the first pod that mounts it.
func (c *Cluster) Start(ctx context.Context) error {
	if name := config.KubernetesDriverPodName.Get(c.conf); name != "" {
		pod, err := c.cs.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("getting driver pod %s/%s (spark.kubernetes.driver.pod.name): %w", c.ns, name, err)
		}
		c.driverPod = pod
	}
	if err := c.backend.Start(ctx); err != nil {
		return err
	}
	exe, err := executorBinary(c.conf)
	if err != nil {
		return err
	}
	ec, err := podspec.NewExecutorConf(c.conf, c.app.ID, c.driverPod, c.backend.URL(), []string{exe})
	if err != nil {
		return err
	}
	if c.app.Auth.Enabled() {
		ec.Authenticate, ec.AuthSecret, ec.AuthSecretName = true, c.app.Auth.Secret, podspec.AuthSecretName(c.app.ID)
	}
	c.execConf = ec
	if err := c.createSupportObjects(ctx); err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	life := lifecycle.New(c.lifecycleOptions(), &applier{c}, c.clock, c.log.With("component", "lifecycle"))
	c.lifePtr.Store(life)
	c.alloc.SetTarget(c.initial)
	// The driver's context ends on SIGINT/SIGTERM and when the application
	// fails: allocation stops at once, before the job and the backend wind
	// down, so executors lost meanwhile are not replaced.
	context.AfterFunc(ctx, c.halt)
	allocCtx, stopAlloc := context.WithCancel(runCtx)
	context.AfterFunc(c.allocCtx, stopAlloc)
	c.goRun(func() error { return life.Run(runCtx) })
	c.goRun(func() error { return c.alloc.Run(allocCtx) })
	if err := c.startSource(runCtx); err != nil {
		return err
	}
	c.log.Info("requesting executor pods", "namespace", c.ns, "executors", c.initial,
		"policy", config.KubernetesAllocationPolicy.Get(c.conf), "driver", c.backend.URL())
	return nil
}

// goRun runs a loop; a loop that fails ends the application.
func (c *Cluster) goRun(f func() error) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := f(); err != nil && !errors.Is(err, context.Canceled) {
			c.fail(err)
		}
	}()
}

// halt stops creating executor pods for good.
func (c *Cluster) halt() {
	c.haltOnce.Do(func() {
		c.haltAlloc()
		c.log.Debug("executor allocation stopped: the driver is stopping")
	})
}

// limitChanged hears from the allocator when a cap (a quota, the id
// maximum) starts holding executors back, changes or ends: the backend
// stops waiting for registrations that cannot come, and a cluster-mode
// driver shows it on its pod for drover submit's status line.
func (c *Cluster) limitChanged(l allocator.Limit) {
	reachable, value := -1, "null"
	if l.Held > 0 {
		reachable, value = l.Reachable, strconv.Quote(l.String())
		c.log.Warn("executors held back", "held", l.Held, "by", l.Cause, "reachable", l.Reachable)
	} else {
		c.log.Info("executors no longer held back")
	}
	c.backend.LimitExecutors(reachable)
	if c.driverPod == nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.allocCtx, 5*time.Second)
	defer cancel()
	patch := []byte(`{"metadata":{"annotations":{"` + podspec.AnnotationExecutorsHeld + `":` + value + `}}}`)
	if _, err := c.cs.CoreV1().Pods(c.ns).Patch(ctx, c.driverPod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		c.log.Debug("annotating the driver pod with the allocation limit", "err", err)
	}
}

// life is the lifecycle manager, nil before Start.
func (c *Cluster) life() *lifecycle.Manager { return c.lifePtr.Load() }

func (c *Cluster) fail(err error) {
	c.halt()
	c.log.Error("application failing", "err", err)
	if c.app.Fail != nil {
		c.app.Fail(err)
	}
}

func (c *Cluster) lifecycleOptions() lifecycle.Options {
	o := lifecycle.DefaultOptions()
	o.ContainerName = c.execConf.ContainerName
	o.DeleteOnTermination = config.KubernetesExecutorDeleteOnTermination.Get(c.conf)
	o.MaxExecutorFailures = max(3, 2*c.initial)
	if n := config.ExecutorMaxNumFailures.Get(c.conf); n > 0 {
		o.MaxExecutorFailures = n
	}
	o.FailuresValidityInterval = config.ExecutorFailuresValidityInterval.Get(c.conf)
	o.MissingPodDetectDelta = config.KubernetesExecutorMissingPodDetectDelta.Get(c.conf)
	o.DeletedCacheTimeout = config.KubernetesExecutorDeletedExecutorsCacheTimeout.Get(c.conf)
	o.StartTimeout = config.KubernetesExecutorStartTimeout.Get(c.conf)
	o.EventProcessingInterval = config.KubernetesExecutorEventProcessingInterval.Get(c.conf)
	return o
}

// createSupportObjects creates the executor config map and, with
// spark.authenticate, the secret executors read it from.
func (c *Cluster) createSupportObjects(ctx context.Context) error {
	if cm := podspec.ExecutorConfigMap(c.execConf, c.conf.Explicit()); cm != nil {
		if _, err := c.cs.CoreV1().ConfigMaps(c.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating executor config map %s/%s: %w", c.ns, cm.Name, err)
		}
		c.created = append(c.created, "configmap/"+cm.Name)
	}
	if sec := podspec.ExecutorAuthSecret(c.execConf); sec != nil {
		if _, err := c.cs.CoreV1().Secrets(c.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating executor auth secret %s/%s: %w", c.ns, sec.Name, err)
		}
		c.created = append(c.created, "secret/"+sec.Name)
	}
	return nil
}

// startSource starts the one watch of the application's executor pods
// (filtered by app id and role) and the loop that turns it into snapshots,
// at most one per spark.kubernetes.allocation.batch.delay. The watch
// re-lists by itself after it expires, so no periodic LIST runs while it is
// healthy; drover.kubernetes.executor.poll.enabled adds one as a safety
// net.
func (c *Cluster) startSource(ctx context.Context) error {
	c.src = podsource.New(c.cs, podsource.Options{Namespace: c.ns, Selector: c.selector, Clock: c.clock,
		Logger: c.log.With("component", "pods")})
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.src.Run(ctx) }()
	if err := c.src.WaitSynced(ctx); err != nil {
		return err
	}
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.snapshotLoop(ctx) }()
	if config.KubernetesExecutorPollEnabled.Get(c.conf) {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.pollLoop(ctx) }()
	}
	c.markDirty()
	return nil
}

func (c *Cluster) markDirty() {
	select {
	case c.dirty <- struct{}{}:
	default:
	}
}

// executorBinary is the executor container's command: the application
// binary's path in the image.
func executorBinary(conf *config.Conf) (string, error) {
	if bin := config.KubernetesExecutorBinary.Get(conf); bin != "" {
		if !path.IsAbs(bin) {
			return "", fmt.Errorf("%s=%s: expected the absolute path of the application binary in the executor image",
				config.KubernetesExecutorBinary.Key(), bin)
		}
		return bin, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the application binary for executor pods (set %s): %w", config.KubernetesExecutorBinary.Key(), err)
	}
	return exe, nil
}

// adaptiveSnapshotDelay coalesces pod events for the adaptive allocator,
// per 1,000 pods: a snapshot is a pass over every cached pod, so with many
// executors the pause grows with them and the driver's CPU per second
// stays flat, up to spark.kubernetes.allocation.batch.delay.
const adaptiveSnapshotDelay = 100 * time.Millisecond

// snapshotDelay is the pause after a snapshot of n pods.
func snapshotDelay(policy allocator.Policy, batchDelay time.Duration, n int) time.Duration {
	if policy == allocator.PolicySpark {
		return batchDelay
	}
	return min(batchDelay, adaptiveSnapshotDelay*time.Duration(max(1, (n+999)/1000)))
}

func (c *Cluster) snapshotLoop(ctx context.Context) {
	// Spark coalesces pod events per batch delay. The adaptive allocator
	// starts its next round as soon as the cluster admitted the last one,
	// so it hears of pods sooner (a snapshot costs a pass over the cached
	// pods, no API request).
	batchDelay := config.KubernetesAllocationBatchDelay.Get(c.conf)
	policy := allocator.Policy(config.KubernetesAllocationPolicy.Get(c.conf))
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.dirty:
		case <-c.src.Changed():
		}
		// The source holds only this application's executor pods (its
		// watch has c.selector): matching the selector again per pod cost
		// about as much as the rest of a snapshot.
		pods, touched := c.src.Take()
		c.publish(pods, touched)
		select {
		case <-ctx.Done():
			return
		case <-c.clock.After(snapshotDelay(policy, batchDelay, len(pods))):
		}
	}
}

// pollLoop lists the pods every spark.kubernetes.executor.apiPollingInterval,
// from the API server's watch cache (resourceVersion=0), in case a watch
// event was lost.
func (c *Cluster) pollLoop(ctx context.Context) {
	t := c.clock.NewTicker(config.KubernetesExecutorAPIPollingInterval.Get(c.conf))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		list, err := c.cs.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: c.selector.String(), ResourceVersion: "0"})
		if err != nil {
			c.log.Warn("polling executor pods", "err", err)
			continue
		}
		// The list may be older than the watch's view: it only adds pods
		// the watch has not shown, never hides one, so a stale list cannot
		// make a live pod look gone (and be created again).
		pods := c.src.Pods()
		for i := range list.Items {
			if _, ok := c.src.Get(list.Items[i].Name); !ok {
				pods = append(pods, &list.Items[i])
			}
		}
		c.publish(pods, nil)
	}
}

func (c *Cluster) publish(pods []*corev1.Pod, touched map[int64]bool) {
	s := snapshot.New(pods, c.execConf.ContainerName, c.clock.Now())
	reg := c.backend.Registered()
	ids := make([]int64, 0, len(reg))
	for id := range reg {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			ids = append(ids, n)
		}
	}
	c.log.Debug("executor pod snapshot", "pods", len(s.Pods), "registered", len(ids))
	c.alloc.SetRegistered(ids...)
	c.alloc.OnSnapshot(s, touched)
	c.life().OnSnapshot(s, true)
}

// admit refuses executors whose pods the allocator deleted, and pods of
// another application.
func (c *Cluster) admit(id, podName string) error {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return fmt.Errorf("executor id %q is not a number", id)
	}
	if c.alloc.IsDeleted(n) {
		return fmt.Errorf("its pod was deleted")
	}
	if podName != "" && c.src != nil {
		if pod, ok := c.src.Get(podName); ok && pod.Labels[snapshot.LabelAppID] != c.app.ID {
			return fmt.Errorf("pod %s belongs to application %q", podName, pod.Labels[snapshot.LabelAppID])
		}
	}
	return nil
}

// ExitReason waits for the lifecycle manager to say why an executor whose
// connection ended went away: pod events, not RPC drops, decide.
func (c *Cluster) ExitReason(ctx context.Context, id string) (scheduler.LossReason, bool) {
	ch := make(chan scheduler.LossReason, 1)
	c.mu.Lock()
	c.waiters[id] = append(c.waiters[id], ch)
	c.mu.Unlock()
	select {
	case r := <-ch:
		return r, true
	case <-ctx.Done():
		return scheduler.LossReason{}, false
	}
}

// ExecutorRemoved deletes the pod of an executor the driver dropped for its
// own reasons (killed, heartbeat timeout); the lifecycle manager handles
// pods of executors it removed itself.
func (c *Cluster) ExecutorRemoved(id string, reason scheduler.LossReason) {
	c.mu.Lock()
	byLifecycle := c.removedByLifecycle[id]
	c.mu.Unlock()
	n, err := strconv.ParseInt(id, 10, 64)
	life := c.life()
	if byLifecycle || err != nil || life == nil {
		return
	}
	// An executor decommissions itself on SIGTERM: its pod is being
	// deleted by someone else, whose cause the lifecycle manager names.
	if reason.Message != coarse.Decommissioned {
		life.KilledByDriver(n)
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.deletePods(ctx, []int64{n}, false); err != nil {
			c.log.Warn("deleting executor pod", "executor", id, "err", err)
		}
	}()
}

// RequestTotalExecutors sets the allocator's target.
func (c *Cluster) RequestTotalExecutors(total int) error {
	c.alloc.SetTarget(total)
	return nil
}

// KillExecutors removes executors from the driver and deletes their pods;
// they may not register again.
func (c *Cluster) KillExecutors(ids []string) error {
	for _, id := range ids {
		c.backend.RemoveExecutor(id, scheduler.LossReason{Message: "executor killed by the driver"})
	}
	return nil
}

// Stop shuts the executors down, stops the loops and, unless
// spark.kubernetes.executor.deleteOnTermination=false, deletes the
// application's executor pods and config map.
func (c *Cluster) Stop(ctx context.Context) error {
	var errs []error
	c.stopOnce.Do(func() {
		c.halt()
		if err := c.backend.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		if c.cancel != nil {
			c.cancel()
		}
		c.wg.Wait()
		if !config.KubernetesExecutorDeleteOnTermination.Get(c.conf) {
			return
		}
		err := c.cs.CoreV1().Pods(c.ns).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: c.selector.String()})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting executor pods: %w", err))
		}
		for _, obj := range c.created {
			kind, name, _ := strings.Cut(obj, "/")
			var err error
			switch kind {
			case "configmap":
				err = c.cs.CoreV1().ConfigMaps(c.ns).Delete(ctx, name, metav1.DeleteOptions{})
			case "secret":
				err = c.cs.CoreV1().Secrets(c.ns).Delete(ctx, name, metav1.DeleteOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting %s: %w", obj, err))
			}
		}
	})
	return errors.Join(errs...)
}

// deletePods deletes executor pods with one delete-collection call; with
// onlyPending, pods that started meanwhile are kept.
func (c *Cluster) deletePods(ctx context.Context, ids []int64, onlyPending bool) error {
	if len(ids) == 0 {
		return nil
	}
	vals := make([]string, len(ids))
	for i, id := range ids {
		vals[i] = strconv.FormatInt(id, 10)
	}
	sort.Strings(vals)
	sel := c.selector.String() + "," + snapshot.LabelExecutorID + " in (" + strings.Join(vals, ",") + ")"
	opts := metav1.ListOptions{LabelSelector: sel}
	if onlyPending {
		opts.FieldSelector = "status.phase=Pending"
	}
	err := c.cs.CoreV1().Pods(c.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, opts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// podClient creates and deletes executor pods for the allocator.
type podClient struct{ c *Cluster }

func (p *podClient) CreateExecutorPod(ctx context.Context, id int64) error {
	c := p.c
	pod, err := podspec.BuildExecutorPod(c.execConf, id)
	if err != nil {
		return err
	}
	for _, pvc := range podspec.OnDemandClaims(c.execConf, pod, id) {
		if _, err := c.cs.CoreV1().PersistentVolumeClaims(c.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating claim %s of executor %d: %w", pvc.Name, id, err)
		}
	}
	if _, err := c.cs.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating executor pod %s: %w", pod.Name, err)
	}
	return nil
}

func (p *podClient) DeleteExecutorPods(ctx context.Context, ids []int64, onlyPending bool) error {
	if life := p.c.life(); life != nil {
		life.KilledByDriver(ids...)
	}
	return p.c.deletePods(ctx, ids, onlyPending)
}

// applier carries out the lifecycle manager's actions.
type applier struct{ c *Cluster }

func (a *applier) Registered() map[int64]time.Time {
	reg := a.c.backend.Registered()
	out := make(map[int64]time.Time, len(reg))
	for id, t := range reg {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			out[n] = t
		}
	}
	return out
}

func (a *applier) RemoveExecutor(id int64, r scheduler.LossReason) {
	sid := strconv.FormatInt(id, 10)
	a.c.mu.Lock()
	a.c.removedByLifecycle[sid] = true
	waiters := a.c.waiters[sid]
	delete(a.c.waiters, sid)
	a.c.mu.Unlock()
	for _, w := range waiters {
		w <- r
	}
	a.c.backend.RemoveExecutor(sid, r)
}

func (a *applier) DeletePod(ctx context.Context, name string) error {
	err := a.c.cs.CoreV1().Pods(a.c.ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (a *applier) LabelInactive(ctx context.Context, name string) error {
	patch := []byte(`{"metadata":{"labels":{"` + snapshot.LabelInactive + `":"true"}}}`)
	_, err := a.c.cs.CoreV1().Pods(a.c.ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (a *applier) Warn(msg string) { a.c.log.Warn(msg) }

func (a *applier) Fail(err error) { a.c.fail(err) }
