package procnode

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
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
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Agent registers process nodes and runs their pods. Create it with New and
// run it with Run.
type Agent struct {
	cfg     Config
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
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ips, err := newIPPool(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("procnode: %w", err)
	}
	return &Agent{
		cfg:     cfg,
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

func (a *Agent) nodeObject(name string) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:   name,
		corev1.LabelOSStable:   runtime.GOOS,
		corev1.LabelArchStable: runtime.GOARCH,
		NodeLabel:              "true",
	}
	for k, v := range a.cfg.Labels {
		labels[k] = v
	}
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: append([]corev1.Taint(nil), a.cfg.Taints...)},
		Status: corev1.NodeStatus{
			Capacity:    a.cfg.Capacity.DeepCopy(),
			Allocatable: a.cfg.Capacity.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "procnode has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "procnode has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "procnode has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "procnode is posting ready status"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: a.cfg.NodeIP},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(a.port)}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          KubeletVersion,
				ContainerRuntimeVersion: "procnode://" + runtime.Version(),
				OperatingSystem:         runtime.GOOS,
				Architecture:            runtime.GOARCH,
				KernelVersion:           "",
				OSImage:                 "drover process node",
				MachineID:               name,
				SystemUUID:              name,
				BootID:                  strconv.FormatInt(time.Now().UnixNano(), 36),
			},
		},
	}
}

// startupTaints are what admission and the node lifecycle controller put on
// nodes that are not Ready yet; a kubelet's node loses them once Ready, and
// without kube-controller-manager nobody would remove them.
var startupTaints = map[string]bool{
	corev1.TaintNodeNotReady:                         true,
	corev1.TaintNodeUnreachable:                      true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
}

// register creates or takes over node name, marks it Ready and removes the
// start-up taints.
func (a *Agent) register(ctx context.Context, name string) (*corev1.Node, error) {
	nodes := a.cfg.Client.CoreV1().Nodes()
	want := a.nodeObject(name)
	node, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		a.log.Info("taking over existing node", "node", name)
		node, err = nodes.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		upd := cur.DeepCopy()
		upd.Status = want.Status
		if upd, err = nodes.UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		for k, v := range want.Labels {
			upd.Labels[k] = v
		}
		var taints []corev1.Taint
		for _, t := range upd.Spec.Taints {
			if !startupTaints[t.Key] {
				taints = append(taints, t)
			}
		}
		for _, t := range want.Spec.Taints {
			if !hasTaint(taints, t) {
				taints = append(taints, t)
			}
		}
		upd.Spec.Taints = taints
		node, err = nodes.Update(ctx, upd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("marking node ready: %w", err)
	}
	return node, nil
}

func hasTaint(list []corev1.Taint, t corev1.Taint) bool {
	for _, o := range list {
		if o.Key == t.Key && o.Effect == t.Effect {
			return true
		}
	}
	return false
}

// heartbeat renews the node's lease, which is what keeps the node lifecycle
// controller from marking it unreachable and evicting its pods, and now and
// then refreshes the Ready condition's heartbeat like a kubelet.
func (a *Agent) heartbeat(ctx context.Context, node *corev1.Node) {
	log := a.log.With("node", node.Name)
	every := a.cfg.LeaseDuration / 4
	lastStatus := time.Now()
	for {
		wait := every
		if err := a.renewLease(ctx, node); err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("renewing node lease failed", "err", err)
			wait = time.Second
		}
		if time.Since(lastStatus) > time.Minute {
			if err := a.refreshReady(ctx, node.Name); err != nil && ctx.Err() == nil {
				log.Warn("refreshing node status failed", "err", err)
			} else {
				lastStatus = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (a *Agent) renewLease(ctx context.Context, node *corev1.Node) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	leases := a.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NowMicro()
	lease, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: node.Name, Namespace: corev1.NamespaceNodeLease,
				// Owned by the node, so deleting the node deletes its lease.
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(node.Name),
				LeaseDurationSeconds: ptr.To(int32(a.cfg.LeaseDuration / time.Second)),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.HolderIdentity = ptr.To(node.Name)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(a.cfg.LeaseDuration / time.Second))
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

func (a *Agent) refreshReady(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	nodes := a.cfg.Client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		for i := range n.Status.Conditions {
			n.Status.Conditions[i].LastHeartbeatTime = now
		}
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
