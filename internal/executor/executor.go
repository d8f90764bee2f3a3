package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/shuffle"
)

// Options configures an executor.
type Options struct {
	DriverURL  string // host:port of the driver's RPC server
	AppID      string
	ExecutorID executorid.ID
	// BindHost is the address the executor's own server listens on; also
	// the address it advertises (a pod IP in Kubernetes, 127.0.0.1 locally)
	// and, when given as an IP, the one it connects to the driver from.
	BindHost    string
	Cores       int
	MemoryBytes int64
	PodName     string
	// LocalDir is where shuffle files go (spark.local.dir; the system's
	// temporary directory when empty). The executor removes its files when
	// it exits.
	LocalDir string
	Auth     rpc.Auth
	// Timeouts used until the driver's configuration arrives with the
	// registration reply.
	NetworkTimeout    time.Duration
	HeartbeatInterval time.Duration
	Clock             clock.WithTicker
	Logger            *slog.Logger
	// StoreRetries, when set, returns the object-store retries the process
	// made since its last call (objstore.TakeRetries): each task status
	// carries them to the driver's counter. Unset for an executor that
	// shares the driver's process, whose counter already has them.
	StoreRetries func() map[string]int64
	// StoreReady, when set, is called with the object store's settings
	// each time the driver's arrive (at registration): the process's kept
	// log (internal/keptlog) starts shipping then.
	StoreReady func(objstore.Config)
	// InitialStore is the object store's settings from the configuration
	// the driver wrote for its executors (OptionsFromEnv), known before
	// registration; nil without one.
	InitialStore *objstore.Config
	// Reconnect is set when the driver may come back: its pod restarts it
	// in place (spark.kubernetes.driver.restartPolicy=OnFailure). A lost
	// driver is then registered with again, within spark.network.timeout,
	// naming the map outputs this executor holds, instead of ending it.
	Reconnect bool
}

// ErrDriverLost means the executor exited because the driver went away.
var ErrDriverLost = errors.New("driver lost")

// Executor is one running executor.
type Executor struct {
	opts Options
	log  *slog.Logger

	networkTimeout    time.Duration
	heartbeatInterval time.Duration
	maxDirectResult   int64
	shuffles          *shuffle.Manager
	store             atomic.Pointer[objstore.Store] // from the driver's settings, at registration

	// plans are the plans of the task sets this executor runs tasks of,
	// from their first launch here until the driver says they ended.
	// Only the goroutine receiving from the driver uses it.
	plans map[int64]*pb.StagePlan

	// waiting hands a task to a worker goroutine waiting for one
	// (spawn); workers end when done closes, as run returns.
	waiting chan func()
	done    chan struct{}

	// localAddr is where connections to the driver come from: BindHost,
	// if it was given as an IP; nil for the system's choice.
	localAddr   *net.TCPAddr
	out         *outbox
	lastContact atomic.Int64 // clock time of the last message from the driver, unix nanos
	draining    atomic.Bool

	// epoch is the newest driver attempt this executor obeyed (Registered).
	epoch atomic.Int64

	mu sync.Mutex
	// gen counts the drivers' sessions this executor served; a task's
	// status goes out only in the session that launched it.
	gen       atomic.Uint64
	running   map[int64]runningTask
	results   map[int64][]byte // results kept for the driver to fetch
	idle      *sync.Cond
	freeCores int
	coreFreed *sync.Cond

	pb.UnimplementedExecutorServer
}

// Run starts an executor and blocks until it ends: when the driver shuts it
// down (nil), when the driver is lost (ErrDriverLost), or, after ctx is
// cancelled (SIGTERM), once its running tasks have finished.
func Run(ctx context.Context, opts Options) error {
	e, err := newExecutor(opts)
	if err != nil {
		return err
	}
	return e.run(ctx)
}

func newExecutor(opts Options) (*Executor, error) {
	if opts.DriverURL == "" || opts.ExecutorID == 0 {
		return nil, fmt.Errorf("starting executor: driver URL and executor id are required")
	}
	if opts.Cores < 1 {
		opts.Cores = 1
	}
	var localAddr *net.TCPAddr
	if ip, err := netip.ParseAddr(opts.BindHost); err == nil && !ip.IsUnspecified() {
		localAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, 0))
	}
	if opts.BindHost == "" {
		opts.BindHost = "127.0.0.1"
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.NetworkTimeout <= 0 {
		opts.NetworkTimeout = config.NetworkTimeout.Get(config.New())
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = config.ExecutorHeartbeatInterval.Get(config.New())
	}
	e := &Executor{
		opts:              opts,
		log:               opts.Logger.With("executor", opts.ExecutorID),
		networkTimeout:    opts.NetworkTimeout,
		heartbeatInterval: opts.HeartbeatInterval,
		maxDirectResult:   config.TaskMaxDirectResultSize.Get(config.New()),
		localAddr:         localAddr,
		out:               newOutbox(),
		plans:             map[int64]*pb.StagePlan{},
		waiting:           make(chan func()),
		done:              make(chan struct{}),
		running:           map[int64]runningTask{},
		results:           map[int64][]byte{},
	}
	e.idle = sync.NewCond(&e.mu)
	e.coreFreed = sync.NewCond(&e.mu)
	e.freeCores = opts.Cores
	return e, nil
}

func (e *Executor) touch() { e.lastContact.Store(e.opts.Clock.Now().UnixNano()) }

func (e *Executor) run(ctx context.Context) error {
	defer close(e.done)
	lis, err := net.Listen("tcp", net.JoinHostPort(e.opts.BindHost, "0"))
	if err != nil {
		return fmt.Errorf("listening for result fetches: %w", err)
	}
	shuffles, err := shuffle.NewManager(shuffle.ManagerOptions{Dir: e.opts.LocalDir, ExecutorID: e.opts.ExecutorID,
		Address: lis.Addr().String(), Auth: e.opts.Auth, Logger: e.log, PeerIdleTimeout: e.opts.NetworkTimeout, Clock: e.opts.Clock})
	if err != nil {
		lis.Close()
		return err
	}
	defer shuffles.Close()
	e.shuffles = shuffles
	srv := grpc.NewServer(rpc.ServerOptions(e.opts.Auth)...)
	pb.RegisterExecutorServer(srv, e)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	addr := lis.Addr().String()
	for again := false; ; again = true {
		stream, err := e.register(ctx, addr, again)
		if err != nil {
			return err
		}
		err = e.session(ctx, stream)
		if !e.opts.Reconnect || !errors.Is(err, ErrDriverLost) || ctx.Err() != nil {
			return err
		}
		// The driver's pod restarts it in place: its next attempt adopts
		// this executor and the map outputs it holds.
		e.log.Warn("driver lost: registering with its next attempt", "err", err, "outputs", len(e.shuffles.Held()))
		e.forgetSession()
	}
}

// session serves one registration's control stream until the driver ends
// it, is lost, or ctx is cancelled (SIGTERM) and the running tasks have
// finished. Every goroutine it starts has ended when it returns.
func (e *Executor) session(ctx context.Context, stream *ctl.ClientStream) error {
	e.log.Info("registered with driver", "driver", e.opts.DriverURL, "cores", e.opts.Cores, "attempt", e.epoch.Load())
	ended := make(chan error, 3)
	stop := make(chan struct{})
	received := make(chan struct{}) // the driver ended the stream
	var wg sync.WaitGroup
	// The stream outlives ctx: SIGTERM starts a graceful exit in which
	// statuses must still reach the driver.
	defer func() {
		close(stop)
		_ = stream.Close()
		wg.Wait()
	}()
	wg.Go(func() { defer close(received); ended <- e.receive(stream) })
	wg.Go(func() { ended <- e.send(stream, stop) })
	wg.Go(func() { ended <- e.heartbeat(stop) })

	select {
	case err := <-ended:
		e.killAll("executor shutting down")
		return err
	case <-ctx.Done():
	}
	// SIGTERM: stop taking tasks, finish the running ones, report, leave.
	e.log.Info("decommissioning: finishing running tasks", "running", e.numRunning())
	e.mu.Lock()
	e.draining.Store(true)
	e.coreFreed.Broadcast()
	e.mu.Unlock()
	e.out.add(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Decommission{Decommission: &pb.Decommission{Reason: "executor received SIGTERM"}}})
	drained := make(chan struct{})
	go func() { e.waitIdle(); close(drained) }()
	select {
	case <-drained:
	case err := <-ended:
		return err
	}
	// The sender delivers the last statuses, then half-closes the stream;
	// the driver ends it once it has read everything. Closing the
	// connection before that could drop statuses it has not read yet.
	e.out.closeAfterFlush()
	select {
	case <-received:
	case <-e.opts.Clock.After(5 * time.Second):
		e.log.Warn("the driver did not acknowledge the last task statuses")
	}
	return nil
}

// forgetSession drops what belonged to a lost driver's session: its
// tasks (killed already; statuses they still report are not sent), its
// plans, the results kept for it and the messages not sent to it. The map
// outputs stay: they are what the next attempt adopts.
func (e *Executor) forgetSession() {
	e.mu.Lock()
	e.gen.Add(1)
	clear(e.running)
	clear(e.results)
	e.idle.Broadcast()
	e.mu.Unlock()
	clear(e.plans)
	e.out.reset()
}

// FetchBlocks serves this executor's map outputs to reducers.
func (e *Executor) FetchBlocks(req *pb.FetchBlocksRequest, stream grpc.ServerStreamingServer[pb.Chunk]) error {
	return e.shuffles.ServeBlocks(req, stream)
}

// FetchResult streams a kept result to the driver and forgets it.
func (e *Executor) FetchResult(req *pb.FetchResultRequest, stream grpc.ServerStreamingServer[pb.Chunk]) error {
	e.mu.Lock()
	data, ok := e.results[req.GetTaskId()]
	delete(e.results, req.GetTaskId())
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("no result kept for task %d", req.GetTaskId())
	}
	for len(data) > 0 {
		n := min(len(data), rpc.ChunkSize)
		if err := stream.Send(&pb.Chunk{Data: data[:n]}); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}
