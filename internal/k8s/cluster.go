package k8s

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/allocator"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/k8s/lifecycle"
	"github.com/drover-project/drover/internal/k8s/podcontrol"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/queueapi"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/scheduler"
)

func init() {
	master.RegisterClusterManager(master.Kubernetes, fromApp)
}

// Cluster is the Kubernetes cluster manager of one application: the
// coarse-grained backend executors register with, the allocator that
// creates their pods, the lifecycle manager that turns pod states into
// executor removals, and the one informer that feeds both.
type Cluster struct {
	app   master.App
	opts  k8sconf.Options
	log   *slog.Logger
	clock clock.WithTicker

	cs kubernetes.Interface
	// closeClient ends the client New built (Stop calls it).
	closeClient func() error
	pods        podcontrol.PodControl
	getenv      func(string) string
	ns          string
	selector    labels.Selector
	backend     *coarse.Backend
	alloc       *allocator.Allocator
	execConf    *podspec.ExecutorConf
	// classifier takes the pod snapshots, reusing unchanged pods' entries.
	classifier *snapshot.Classifier
	driverPod  *corev1.Pod
	initial    int

	src PodSource
	// podSource is Deps.PodSource, started as src by Start.
	podSource PodSource
	dirty     chan struct{}
	events    *events.Bus
	// placed is what the event stream was last told of each executor's
	// pod: its node and phase. The snapshot and poll loops share it.
	placedMu sync.Mutex
	placed   map[executorid.ID]placement
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	// haltOnce stops the allocator the moment the driver decides to stop
	// (signal, job end, failure): no pod is created after that.
	haltOnce  sync.Once
	haltAlloc context.CancelFunc
	allocCtx  context.Context
	lifePtr   atomic.Pointer[lifecycle.Manager]

	mu       sync.Mutex
	stopping bool
	tracked  sync.WaitGroup // goTracked's goroutines
	waiters  map[executorid.ID][]chan scheduler.LossReason
	created  []string // names of the config map, secret and PodGroup created, for Stop
	queue    *queueWatch
}

var (
	_ master.Cluster                   = (*Cluster)(nil)
	_ coarse.ClusterManager            = (*Cluster)(nil)
	_ backend.ExecutorAllocationClient = (*Cluster)(nil)
	_ allocator.PodClient              = (*podClient)(nil)
	_ lifecycle.Applier                = (*applier)(nil)
)

// fromApp is the registry's factory: the Kubernetes options read from the
// application's configuration (conf, read here alone), and the production
// dependencies.
func fromApp(app master.App, conf *config.Conf) (master.Cluster, error) {
	opts, err := load(conf, app.Master, app.ID)
	if err != nil {
		return nil, err
	}
	return New(app, opts, Deps{})
}

// Deps are what a Kubernetes cluster manager is built from, besides the
// application. Zero fields take the production defaults.
type Deps struct {
	// Client talks to the API server; nil builds one from the master URL
	// and the configuration (kubeconfig, in-cluster or spark.kubernetes.*
	// credentials).
	Client kubernetes.Interface
	// Clock paces every loop; nil is the real clock.
	Clock clock.WithTicker
	// WrapTransport, with a nil Client, wraps the built client's
	// transport (benchmarks count requests with it).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// PodSource watches the executors' pods; nil watches them through
	// Client (podsource.Source).
	PodSource PodSource
	// PodControl creates and deletes the executors' pods; nil talks to
	// Client.
	PodControl podcontrol.PodControl
	// Getenv reads the driver's environment (the downward API's pod
	// fields, KUBERNETES_SERVICE_HOST, where credential files are
	// mounted); nil is os.Getenv.
	Getenv func(string) string
}

// New builds the cluster manager of app with opts (k8sconf.Load, which
// checked them, so bad configuration fails before anything is created).
// The coarse backend's options are app.Coarse, with the addresses, counts
// and hooks added here.
func New(app master.App, opts k8sconf.Options, deps Deps) (*Cluster, error) {
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Getenv == nil {
		deps.Getenv = os.Getenv
	}
	c := &Cluster{
		app:       app,
		opts:      opts,
		log:       app.Logger,
		clock:     deps.Clock,
		getenv:    deps.Getenv,
		podSource: deps.PodSource,
		ns:        opts.Namespace,
		initial:   opts.InitialExecutors,
		dirty:     make(chan struct{}, 1),
		waiters:   map[executorid.ID][]chan scheduler.LossReason{},
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	logging.RouteKlog(c.log)
	if !opts.CheckPeerAddress {
		warnNoPeerCheck(c.log)
	}
	c.cs = deps.Client
	if c.cs == nil {
		cs, err := newClient(app.ID, app.Master, opts, deps.WrapTransport, c.log)
		if err != nil {
			return nil, err
		}
		c.cs, c.closeClient = cs, cs.Close
	}
	c.pods = deps.PodControl
	if c.pods == nil {
		c.pods = podcontrol.New(c.cs, c.log)
	}
	c.selector = labels.SelectorFromSet(labels.Set{snapshot.LabelAppID: app.ID, snapshot.LabelRole: snapshot.RoleExecutor})

	bo := app.Coarse
	bo.BindAddress, bo.Port, bo.AdvertiseHost = opts.BindAddress, opts.DriverPort, opts.DriverHost
	bo.InitialExecutors, bo.MinRegisteredRatio = c.initial, opts.MinRegisteredRatio
	bo.Admit, bo.OnExecutorsChanged, bo.Logger, bo.Events = c.admit, c.markDirty, c.log, app.Events
	c.backend = coarse.New(app.Scheduler, c, bo)
	c.alloc = allocator.New(opts.Allocator, &podClient{c}, c.clock, c.log.With("component", "allocator"))
	c.alloc.OnLimit(c.limitChanged)
	q := opts.Queue
	c.queue = &queueWatch{c: c, q: q, timeout: opts.QueueTimeout,
		exists: func(ctx context.Context) (bool, error) { return queueapi.LocalQueueExists(ctx, c.cs, c.ns, q.Name) }}
	c.alloc.OnRound(c.queue.onRound)
	c.alloc.PublishTo(app.Events)
	c.events = app.Events
	c.allocCtx, c.haltAlloc = context.WithCancel(context.Background())
	return c, nil
}

// Backend is the coarse-grained backend executors register with.
func (c *Cluster) Backend() backend.SchedulerBackend { return c.backend }

// Allocation grows and shrinks the executor pods.
func (c *Cluster) Allocation() backend.Scalable { return backend.NewScalable(c, c.backend) }

// Start brings the application's Kubernetes side up in Spark's order:
// initial target, lifecycle manager, allocator, pod source; the executor
// config map is created before the first pod that mounts it.
func (c *Cluster) Start(ctx context.Context) error { return c.withRBACHint(c.start(ctx)) }

func (c *Cluster) start(ctx context.Context) error {
	if name := c.opts.DriverPodName; name != "" {
		pod, err := c.getDriverPod(ctx, name)
		if err != nil {
			return err
		}
		c.driverPod = pod
	}
	if err := c.backend.Start(ctx); err != nil {
		return err
	}
	ec, err := c.opts.Executor.Bind(c.driverPod, c.backend.URL())
	if err != nil {
		return err
	}
	ec.Credentials = credentials(c.app.Security.Executors)
	c.execConf = ec
	c.classifier = snapshot.NewClassifier(ec.ContainerName)
	if err := c.startQueue(ctx); err != nil {
		return err
	}
	// The support objects are created while the pod source syncs: each is
	// a round trip to the API server, and a small application waits for
	// all of them before its first executor pod. The target is set once
	// they exist, so no pod is created before the config map it mounts.
	supported := make(chan error, 1)
	go func() { supported <- c.createSupportObjects(ctx) }()

	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	lo := c.opts.Lifecycle
	lo.ContainerName = ec.ContainerName
	life := lifecycle.New(lo, &applier{c}, c.clock, c.log.With("component", "lifecycle"))
	c.lifePtr.Store(life)
	// The driver's context ends on SIGINT/SIGTERM and when the application
	// fails: allocation stops at once, before the job and the backend wind
	// down, so executors lost meanwhile are not replaced.
	context.AfterFunc(ctx, c.halt)
	allocCtx, stopAlloc := context.WithCancel(runCtx)
	context.AfterFunc(c.allocCtx, stopAlloc)
	c.goRun(func() error { return life.Run(runCtx) })
	c.goRun(func() error { return c.alloc.Run(allocCtx) })
	synced := make(chan error, 1)
	go func() { synced <- c.startSource(runCtx) }()
	if err := <-supported; err != nil {
		// A driver that may not create these may not list its pods
		// either, and the pod source would retry its first list for
		// ever: the refusal here is the application's end.
		cancel()
		<-synced
		return err
	}
	if err := <-synced; err != nil {
		return err
	}
	c.alloc.SetTarget(c.initial)
	c.log.Info("requesting executor pods", "namespace", c.ns, "executors", c.initial,
		"policy", c.opts.Allocator.Policy, "driver", c.backend.URL())
	c.awaitAdoption(ctx)
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

// life is the lifecycle manager, nil before Start.
func (c *Cluster) life() *lifecycle.Manager { return c.lifePtr.Load() }

func (c *Cluster) fail(err error) {
	err = c.withRBACHint(err)
	c.halt()
	c.log.Error("application failing", "err", err)
	if c.app.Fail != nil {
		c.app.Fail(err)
	}
}
