package coarse

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"

	"google.golang.org/grpc"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

// Options configures a Backend.
type Options struct {
	AppID string
	// MaxLaunchBytes caps the task payloads batched into one launch message
	// (spark.rpc.message.maxSize; 128 MiB when 0): a batch starts anew past
	// it, so a message stays within what the RPC carries.
	MaxLaunchBytes int64
	// Conf is sent to each executor when it registers: only what executors
	// read (executor.ConfKeys), never credentials or other settings.
	Conf map[string]string
	Auth rpc.Auth
	// BindAddress and Port are where the driver listens (spark.driver.bindAddress,
	// spark.driver.port; 0 picks a free port); AdvertiseHost is the host
	// executors dial (spark.driver.host).
	BindAddress   string
	Port          int
	AdvertiseHost string

	// InitialExecutors and MinRegisteredRatio decide when enough executors
	// have registered; MaxRegisteredWait bounds that wait.
	InitialExecutors   int
	MinRegisteredRatio float64
	MaxRegisteredWait  time.Duration
	// DefaultParallelism overrides the total-cores default when > 0.
	DefaultParallelism int
	// Prefetch is drover.scheduler.prefetch: tasks per core queued ahead
	// of free cores while the backlog exceeds every free core.
	Prefetch int
	// MaxPrefetch is drover.scheduler.maxPrefetch: the most tasks per core
	// queued ahead for a stage measured to have short tasks.
	MaxPrefetch int

	// NetworkTimeout removes an executor not heard from for that long,
	// checked every TimeoutInterval.
	NetworkTimeout  time.Duration
	TimeoutInterval time.Duration

	// Admit, when set, may refuse an executor's registration: Kubernetes
	// admits only executors it created, from their own pods' addresses.
	// ctx ends when the backend stops; the hook may wait a bounded time.
	// Its error may wrap ErrGone or ErrNotYet, which say what the refusal
	// means.
	Admit func(ctx context.Context, r Registration) error
	// Epoch is the driver's attempt (its container's restart count), sent
	// with every registration reply: executors obey no older attempt.
	Epoch int64
	// Adopt, when set, is given the map outputs an executor names when it
	// registers with a restarted driver, before the executor counts as
	// registered (RegisteredIDs), is offered tasks or OnExecutorsChanged
	// hears of it (dag.Adoption.Add). It is called with the backend's lock
	// held: it must only record, and call nothing back.
	Adopt func(executor executorid.ID, address string, held []shuffle.HeldOutput)
	// OnExecutorsChanged, when set, is called after an executor registers
	// or is removed, without the backend's lock held.
	OnExecutorsChanged func()
	// Events hears of every executor registered and removed.
	Events *events.Bus

	Clock  clock.WithTicker
	Logger *slog.Logger
}

// ClusterManager is the part of a cluster manager the backend consults.
type ClusterManager interface {
	// ExitReason blocks until the cluster manager knows why an executor's
	// connection ended (its process exited, its pod failed) or ctx ends.
	ExitReason(ctx context.Context, executorID executorid.ID) (scheduler.LossReason, bool)
	// ExecutorLost tells the cluster manager the backend dropped an
	// executor on its own (its connection ended, its heartbeats stopped),
	// so it ends and replaces the process or pod. Removals the cluster
	// manager asks for with RemoveExecutor are never echoed back: removal
	// flows one way.
	ExecutorLost(executorID executorid.ID, reason scheduler.LossReason)
}

// ExecutorInfo describes a registered executor.
type ExecutorInfo struct {
	ID         executorid.ID
	Address    string
	PodName    string
	TotalCores int
	FreeCores  int
}

type executorData struct {
	ExecutorInfo
	out             *outbox
	lastSeen        atomic.Int64
	decommissioning bool
	disabled        bool
	// plans are the task sets whose plan the executor was sent and has
	// not been told to forget; nil until the first launch.
	plans map[int64]bool
	// running holds the tasks launched on the executor and not reported
	// ended, with their cores: only their ends count (statusUpdate).
	running      map[int64]int
	registeredAt time.Time
	// acked is when the executor last heard from the driver in answer to
	// a heartbeat (or registered); only the executor's handler, one
	// message at a time, uses it.
	acked     time.Time
	fetchConn *grpc.ClientConn
}

// Backend is the coarse-grained scheduler backend.
type Backend struct {
	opts    Options
	sched   *scheduler.Scheduler
	log     *slog.Logger
	cluster ClusterManager

	server   *ctl.Server
	listener net.Listener
	revive   chan struct{}
	stopCh   chan struct{}
	// runCtx ends when Stop begins: goroutines started with goTracked
	// (result fetches, waits for an exit reason) stop with it, and Stop
	// waits for them.
	runCtx    context.Context
	cancelRun context.CancelFunc
	wg        sync.WaitGroup
	// fetchers bounds the result fetches in flight (Spark's
	// spark.resultGetter.threads, 4).
	fetchers chan struct{}

	// ended are task sets that ended since the last offers: their plans
	// are to be forgotten (TaskSetEnded). Its own lock, because the
	// scheduler reports under its lock, which b.mu is taken before.
	endedMu sync.Mutex
	ended   []int64

	mu        sync.Mutex
	executors map[executorid.ID]*executorData
	excluded  excludedIDs // killed or lost: may not register again
	// failures are the refused registrations of each peer address;
	// admitting, its registrations the Admit hook is deciding on.
	failures   failureLimiter
	admitting  map[netip.Addr]int
	registered chan struct{} // closed and replaced whenever an executor registers
	// reachable is how many executors the cluster manager can have for
	// now, < 0 for no limit; capped is closed and replaced when it changes.
	reachable  int
	capped     chan struct{}
	stopped    bool
	totalCores int
}

var (
	_ backend.SchedulerBackend = (*Backend)(nil)
	_ backend.ExecutorRegistry = (*Backend)(nil)
	_ scheduler.PlanKeeper     = (*Backend)(nil)
)

// New returns a backend for sched. The cluster manager may be nil.
func New(sched *scheduler.Scheduler, cluster ClusterManager, opts Options) *Backend {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.NetworkTimeout <= 0 {
		opts.NetworkTimeout = 120 * time.Second
	}
	if opts.TimeoutInterval <= 0 {
		opts.TimeoutInterval = 60 * time.Second
	}
	if opts.BindAddress == "" {
		opts.BindAddress = "127.0.0.1"
	}
	if opts.MaxLaunchBytes <= 0 {
		opts.MaxLaunchBytes = 128 << 20
	}
	if opts.AdvertiseHost == "" {
		opts.AdvertiseHost = opts.BindAddress
	}
	runCtx, cancelRun := context.WithCancel(context.Background())
	return &Backend{
		opts:       opts,
		sched:      sched,
		cluster:    cluster,
		log:        opts.Logger,
		revive:     make(chan struct{}, 1),
		stopCh:     make(chan struct{}),
		runCtx:     runCtx,
		cancelRun:  cancelRun,
		fetchers:   make(chan struct{}, resultFetchers),
		executors:  map[executorid.ID]*executorData{},
		registered: make(chan struct{}),
		reachable:  -1,
		capped:     make(chan struct{}),
	}
}

// Start listens for executors.
func (b *Backend) Start(ctx context.Context) error {
	lc := ctl.ListenConfig()
	lis, err := lc.Listen(ctx, "tcp", net.JoinHostPort(b.opts.BindAddress, strconv.Itoa(b.opts.Port)))
	if err != nil {
		return fmt.Errorf("listening on spark.driver.bindAddress %s port %d: %w", b.opts.BindAddress, b.opts.Port, err)
	}
	b.listener = lis
	// A write to an executor that stays blocked for spark.network.timeout
	// means it is gone, as its silence for as long does.
	b.server = ctl.NewServer(b.opts.Auth, ctl.Options{WriteTimeout: b.opts.NetworkTimeout}, b.log, b.Control)
	b.wg.Add(3)
	go func() { defer b.wg.Done(); _ = b.server.Serve(lis) }()
	go func() { defer b.wg.Done(); b.reviveLoop() }()
	go func() { defer b.wg.Done(); b.expiryLoop() }()
	return nil
}

// URL is the address executors dial: spark.driver.host and the bound port.
func (b *Backend) URL() string {
	_, port, _ := net.SplitHostPort(b.listener.Addr().String())
	return net.JoinHostPort(b.opts.AdvertiseHost, port)
}

// Stop tells every executor to shut down and stops serving.
func (b *Backend) Stop(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	for _, ex := range b.executors {
		ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_Shutdown{Shutdown: &pb.Shutdown{Reason: "application finished"}}})
		ex.out.close()
	}
	b.mu.Unlock()
	close(b.stopCh)
	b.cancelRun()
	if b.server != nil {
		done := make(chan struct{})
		go func() { b.server.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			b.server.Stop()
			<-done
		case <-b.opts.Clock.After(5 * time.Second):
			b.server.Stop()
			<-done
		}
	}
	b.wg.Wait()
	b.mu.Lock()
	for _, ex := range b.executors {
		if ex.fetchConn != nil {
			_ = ex.fetchConn.Close()
		}
	}
	b.mu.Unlock()
	return nil
}

// goTracked runs f on its own goroutine, with a context that ends when
// Stop begins; Stop waits for it. Once the backend is stopping it runs
// nothing.
func (b *Backend) goTracked(f func(ctx context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f(b.runCtx)
	}()
}
