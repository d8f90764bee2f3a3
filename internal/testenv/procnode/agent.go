package procnode

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// NodeLabel is set to "true" on every node an Agent registers, so pods can
// select process nodes with a nodeSelector.
const NodeLabel = "drover.dev/process-node"

// KubeletVersion is what process nodes report as their kubelet version.
const KubeletVersion = "v1.36.3-procnode"

// Config configures an Agent.
type Config struct {
	// Client talks to the API server; it needs to manage nodes, leases, pods
	// and their status, read secrets and configmaps, and request service
	// account tokens.
	Client kubernetes.Interface
	// NodeNames are the nodes to register; each runs the pods bound to it.
	NodeNames []string
	// Dir holds the pods' directories: logs, volumes, working directories.
	Dir string
	// PodCIDR is the loopback range pod IPs come from; default 127.1.0.0/16.
	PodCIDR netip.Prefix
	// NodeIP is the nodes' InternalIP and the pods' hostIP; default 127.0.0.1.
	NodeIP string
	// Capacity of each node; default 32 CPUs, 64Gi memory, 256 pods.
	Capacity corev1.ResourceList
	// Labels and Taints are added to each node.
	Labels map[string]string
	Taints []corev1.Taint
	// APIServer is the API server's host:port, given to containers as
	// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT when set.
	APIServer string
	// Env is added to every container's environment before the pod's own
	// variables ("NAME=value"). PATH defaults to this process's PATH.
	Env []string
	// ClientCAs, when set, makes the kubelet API (container logs for kubectl
	// logs) require client certificates signed by one of them; give the API
	// server a client certificate with --kubelet-client-certificate.
	ClientCAs *x509.CertPool
	// LeaseDuration of the node leases, renewed every quarter of it; default 40s.
	LeaseDuration time.Duration
	// InitialBackoff and MaxBackoff bound the crash-loop back-off between
	// restarts of a failed container: the first restart is immediate, the
	// next waits InitialBackoff, doubling up to MaxBackoff, and a container
	// that ran 2×MaxBackoff starts over. Zero means the kubelet's 10s and
	// 300s; only tests shorten them, so that a process node behaves like a
	// kubelet everywhere else.
	InitialBackoff, MaxBackoff time.Duration
	// Clock is the time restarts are decided and reported with; default the
	// real clock.
	Clock clock.WithDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Agent registers process nodes and runs their pods. Create it with New and
// run it with Run.
type Agent struct {
	cfg     Config
	clock   clock.WithDelayedExecution
	backoff backoffPolicy
	log     *slog.Logger
	ips     *ipPool
	ready   chan struct{}
	started atomic.Bool
	port    int // the kubelet API's port, set by Run before registering nodes

	mu      sync.Mutex
	ctx     context.Context // Run's context, for the workers
	workers map[types.UID]*podWorker
	byName  map[string]*podWorker // namespace/name → the newest worker, for logs
}

// New validates cfg, fills its defaults and returns an Agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Client == nil {
		return nil, errors.New("procnode: Config.Client is required")
	}
	if len(cfg.NodeNames) == 0 {
		return nil, errors.New("procnode: Config.NodeNames is empty")
	}
	if cfg.Dir == "" {
		return nil, errors.New("procnode: Config.Dir is required")
	}
	if !cfg.PodCIDR.IsValid() {
		cfg.PodCIDR = netip.MustParsePrefix("127.1.0.0/16")
	}
	if cfg.NodeIP == "" {
		cfg.NodeIP = "127.0.0.1"
	}
	if cfg.Capacity == nil {
		cfg.Capacity = corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("32"),
			corev1.ResourceMemory:           resource.MustParse("64Gi"),
			corev1.ResourcePods:             resource.MustParse("256"),
			corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		}
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 40 * time.Second
	}
	if cfg.InitialBackoff < 0 || cfg.MaxBackoff < 0 {
		return nil, errors.New("procnode: negative Config.InitialBackoff or MaxBackoff")
	}
	if cfg.InitialBackoff == 0 {
		cfg.InitialBackoff = DefaultInitialBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.InitialBackoff)
	}
	if cfg.MaxBackoff < cfg.InitialBackoff {
		return nil, fmt.Errorf("procnode: Config.MaxBackoff %s is below InitialBackoff %s", cfg.MaxBackoff, cfg.InitialBackoff)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ips, err := newIPPool(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("procnode: %w", err)
	}
	return &Agent{
		cfg:     cfg,
		clock:   cfg.Clock,
		backoff: backoffPolicy{initial: cfg.InitialBackoff, max: cfg.MaxBackoff},
		log:     cfg.Logger.With("component", "procnode"),
		ips:     ips,
		ready:   make(chan struct{}),
		workers: map[types.UID]*podWorker{},
		byName:  map[string]*podWorker{},
	}, nil
}

// NodeNames returns the names of the agent's nodes.
func (a *Agent) NodeNames() []string { return append([]string(nil), a.cfg.NodeNames...) }

// Ready is closed once every node is registered and Ready and the agent
// watches their pods.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// Run registers the nodes and runs their pods until ctx is done, then kills
// every process it started and waits for them before returning. The nodes
// stay registered: like a stopped kubelet, they turn NotReady once their
// leases expire.
func (a *Agent) Run(ctx context.Context) error {
	if !a.started.CompareAndSwap(false, true) {
		return errors.New("procnode: Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.mu.Lock()
	a.ctx = ctx
	a.mu.Unlock()

	srv, port, err := a.serveKubelet()
	if err != nil {
		return fmt.Errorf("starting the kubelet API: %w", err)
	}
	a.port = port

	var (
		wg        sync.WaitGroup
		factories []informers.SharedInformerFactory
	)
	defer func() {
		cancel()
		for _, f := range factories {
			f.Shutdown()
		}
		a.waitWorkers()
		wg.Wait()
		_ = srv.Close()
	}()
	for _, name := range a.cfg.NodeNames {
		node, err := a.register(ctx, name)
		if err != nil {
			return fmt.Errorf("registering node %s: %w", name, err)
		}
		wg.Go(func() { a.heartbeat(ctx, node) })
	}
	var synced []cache.InformerSynced
	for _, name := range a.cfg.NodeNames {
		f := informers.NewSharedInformerFactoryWithOptions(a.cfg.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", name).String()
		}))
		inf := f.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { a.onPod(obj) },
			UpdateFunc: func(_, obj any) { a.onPod(obj) },
			DeleteFunc: a.onPodDelete,
		}); err != nil {
			return fmt.Errorf("watching pods of node %s: %w", name, err)
		}
		f.Start(ctx.Done())
		factories = append(factories, f)
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("waiting for the pods of nodes %v: %w", a.cfg.NodeNames, context.Cause(ctx))
	}
	a.log.Info("process nodes ready", "nodes", a.cfg.NodeNames, "podCIDR", a.cfg.PodCIDR, "kubeletPort", port)
	close(a.ready)
	<-ctx.Done()
	return nil
}

func (a *Agent) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx.Err() != nil {
		return
	}
	w := a.workers[pod.UID]
	if w == nil {
		terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		if terminal || pod.DeletionTimestamp != nil {
			// Ended before this agent saw it (or never started): a deleted one
			// only needs its object removed.
			if pod.DeletionTimestamp != nil {
				w = newPodWorker(a, pod)
				a.workers[pod.UID] = w
				w.requestStop()
				go func() {
					defer close(w.done)
					w.deleteObject(a.ctx)
				}()
			}
			return
		}
		w = newPodWorker(a, pod)
		a.workers[pod.UID] = w
		a.byName[pod.Namespace+"/"+pod.Name] = w
		go w.run(a.ctx)
		return
	}
	w.setLatest(pod)
	w.notify()
	if pod.DeletionTimestamp != nil {
		w.requestStop()
	}
}

func (a *Agent) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if w := a.workers[pod.UID]; w != nil {
		w.markGone()
		delete(a.workers, pod.UID)
		go func() {
			<-w.done
			// Secrets and tokens don't outlive the pod; logs stay for Logs.
			_ = os.RemoveAll(w.dir + "/volumes")
		}()
	}
}

// waitWorkers waits for every pod worker; Run's context is done by then, so
// they are killing their processes.
func (a *Agent) waitWorkers() {
	a.mu.Lock()
	ws := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		ws = append(ws, w)
	}
	a.mu.Unlock()
	for _, w := range ws {
		<-w.done
	}
}
