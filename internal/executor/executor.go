package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/shuffle"
)

// Options configures an executor.
type Options struct {
	DriverURL  string // host:port of the driver's RPC server
	AppID      string
	ExecutorID executorid.ID
	// BindHost is the address the executor's own server listens on; also
	// the address it advertises (a pod IP in Kubernetes, 127.0.0.1 locally).
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

	out         *outbox
	lastContact atomic.Int64 // clock time of the last message from the driver, unix nanos
	draining    atomic.Bool

	mu        sync.Mutex
	running   map[int64]context.CancelFunc
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
		out:               newOutbox(),
		running:           map[int64]context.CancelFunc{},
		results:           map[int64][]byte{},
	}
	e.idle = sync.NewCond(&e.mu)
	e.coreFreed = sync.NewCond(&e.mu)
	e.freeCores = opts.Cores
	return e, nil
}

func (e *Executor) touch() { e.lastContact.Store(e.opts.Clock.Now().UnixNano()) }

func (e *Executor) run(ctx context.Context) error {
	lis, err := net.Listen("tcp", net.JoinHostPort(e.opts.BindHost, "0"))
	if err != nil {
		return fmt.Errorf("listening for result fetches: %w", err)
	}
	shuffles, err := shuffle.NewManager(shuffle.ManagerOptions{Dir: e.opts.LocalDir, ExecutorID: e.opts.ExecutorID,
		Address: lis.Addr().String(), Auth: e.opts.Auth, Logger: e.log})
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

	conn, err := grpc.NewClient(e.opts.DriverURL, rpc.DialOptions(e.opts.Auth)...)
	if err != nil {
		return fmt.Errorf("connecting to driver %s: %w", e.opts.DriverURL, err)
	}
	defer conn.Close()

	// The stream outlives ctx: SIGTERM starts a graceful exit in which
	// statuses must still reach the driver.
	streamCtx, cancelStream := context.WithCancel(context.Background())
	defer cancelStream()
	stream, err := e.register(ctx, streamCtx, pb.NewDriverClient(conn), lis.Addr().String())
	if err != nil {
		return err
	}
	e.log.Info("registered with driver", "driver", e.opts.DriverURL, "cores", e.opts.Cores)

	ended := make(chan error, 3)
	stop := make(chan struct{})
	defer close(stop)
	received := make(chan struct{}) // the driver ended the stream
	go func() { defer close(received); ended <- e.receive(stream) }()
	go func() { ended <- e.send(stream, stop) }()
	go func() { ended <- e.heartbeat(stop) }()

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
	// the driver ends it once it has read everything. Cancelling the stream
	// before that could drop statuses still in gRPC's buffers.
	e.out.closeAfterFlush()
	select {
	case <-received:
	case <-e.opts.Clock.After(5 * time.Second):
		e.log.Warn("the driver did not acknowledge the last task statuses")
	}
	return nil
}

// register opens the control stream and waits for the driver's reply,
// retrying until spark.network.timeout: a driver that is still starting is
// not a failure. A SIGTERM (ctx) before registration ends the attempt.
func (e *Executor) register(ctx, streamCtx context.Context, client pb.DriverClient, addr string) (pb.Driver_ControlClient, error) {
	deadline := e.opts.Clock.Now().Add(e.networkTimeout)
	backoff := 50 * time.Millisecond
	for {
		stream, err := e.tryRegister(streamCtx, client, addr)
		if err == nil {
			return stream, nil
		}
		if refused := e.opts.Auth.Refused(e.opts.DriverURL); refused != nil {
			return nil, fmt.Errorf("registering with driver %s: the connection was refused (the driver and this executor do not share the application's credentials): %w",
				e.opts.DriverURL, refused)
		}
		if e.opts.Clock.Now().After(deadline) || isPermanent(err) {
			return nil, fmt.Errorf("registering with driver %s: %w", e.opts.DriverURL, err)
		}
		e.log.Debug("driver not reachable yet", "err", err)
		select {
		case <-e.opts.Clock.After(backoff):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (e *Executor) tryRegister(ctx context.Context, client pb.DriverClient, addr string) (pb.Driver_ControlClient, error) {
	stream, err := client.Control(ctx)
	if err != nil {
		return nil, err
	}
	err = stream.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: &pb.Register{
		AppId:       e.opts.AppID,
		ExecutorId:  e.opts.ExecutorID.String(),
		Address:     addr,
		Cores:       int32(e.opts.Cores),
		PodName:     e.opts.PodName,
		MemoryBytes: e.opts.MemoryBytes,
	}}})
	if err != nil {
		return nil, err
	}
	msg, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	reg := msg.GetRegistered()
	if reg == nil {
		return nil, fmt.Errorf("driver answered registration with %T", msg.GetMsg())
	}
	e.touch()
	e.applyConf(reg.GetConf())
	return stream, nil
}

// ConfKeys are the only settings an executor reads from the driver's
// Registered message: the driver sends these and nothing else, so no
// credential or secret-looking value of the application's configuration
// travels to executors. The object store's are where it is and how to
// address it, never its credentials, which executors take from their own
// environment.
var ConfKeys = append([]string{
	config.NetworkTimeout.Key(), config.ExecutorHeartbeatInterval.Key(), config.TaskMaxDirectResultSize.Key(),
}, objstore.ExecutorKeys...)

// applyConf adopts the driver's timeouts and object-store settings, as
// Spark executors adopt the driver's configuration when they register.
func (e *Executor) applyConf(kv map[string]string) {
	c := config.New()
	for k, v := range kv {
		c.Set(k, v)
	}
	e.networkTimeout = config.NetworkTimeout.Get(c)
	e.heartbeatInterval = config.ExecutorHeartbeatInterval.Get(c)
	e.maxDirectResult = config.TaskMaxDirectResultSize.Get(c)
	e.store.Store(objstore.New(objstore.ConfigFrom(c)))
}

func (e *Executor) receive(stream pb.Driver_ControlClient) error {
	for {
		msg, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: driver closed the connection", ErrDriverLost)
			}
			return fmt.Errorf("%w: %v", ErrDriverLost, err)
		}
		e.touch()
		switch m := msg.GetMsg().(type) {
		case *pb.DriverMessage_Launch:
			for _, t := range m.Launch.GetTasks() {
				e.launch(t)
			}
		case *pb.DriverMessage_Kill:
			e.killTask(m.Kill.GetTaskId(), m.Kill.GetReason())
		case *pb.DriverMessage_RemoveShuffles:
			e.removeShuffles(m.RemoveShuffles.GetShuffleIds())
		case *pb.DriverMessage_Shutdown:
			e.log.Info("driver asked executor to shut down", "reason", m.Shutdown.GetReason())
			return nil
		case *pb.DriverMessage_HeartbeatAck:
			if m.HeartbeatAck.GetReregister() {
				return fmt.Errorf("%w: the driver no longer knows this executor", ErrDriverLost)
			}
		}
	}
}

// removeShuffles deletes map outputs no dataset can read any more. Off the
// receive loop: a directory of many files takes a while to scan.
func (e *Executor) removeShuffles(ids []int64) {
	go func() {
		shuffles := make([]int, len(ids))
		for i, id := range ids {
			shuffles[i] = int(id)
		}
		n, err := e.shuffles.RemoveShuffles(shuffles...)
		if err != nil {
			e.log.Warn("removing shuffle files", "shuffles", shuffles, "err", err)
			return
		}
		e.log.Debug("removed shuffle files", "shuffles", shuffles, "files", n)
	}()
}

func (e *Executor) send(stream pb.Driver_ControlClient, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		case <-e.out.notify:
		}
		msgs, closing := e.out.take()
		for _, m := range msgs {
			if err := stream.Send(m); err != nil {
				return fmt.Errorf("%w: sending to driver: %v", ErrDriverLost, err)
			}
		}
		if closing {
			return stream.CloseSend()
		}
	}
}

// heartbeat reports the running tasks every spark.executor.heartbeatInterval
// and ends the executor when nothing has come from the driver for
// spark.network.timeout.
func (e *Executor) heartbeat(stop <-chan struct{}) error {
	t := e.opts.Clock.NewTicker(e.heartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-t.C():
		}
		now := e.opts.Clock.Now()
		if driverUnreachable(time.Unix(0, e.lastContact.Load()), now, e.networkTimeout) {
			return fmt.Errorf("%w: no message from the driver for %s (spark.network.timeout)", ErrDriverLost, e.networkTimeout)
		}
		e.out.add(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Heartbeat{Heartbeat: &pb.Heartbeat{
			UnixNano:       now.UnixNano(),
			RunningTaskIds: e.runningIDs(),
		}}})
	}
}

// driverUnreachable decides whether the executor should give up on its driver.
func driverUnreachable(lastContact, now time.Time, timeout time.Duration) bool {
	return now.Sub(lastContact) > timeout
}

func (e *Executor) launch(t *pb.TaskDescription) {
	tid := t.GetTaskId()
	if e.draining.Load() {
		e.out.addStatus(&pb.TaskStatus{TaskId: tid, State: pb.TaskState_TASK_STATE_KILLED, Error: "executor is decommissioning"})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	e.running[tid] = cancel
	e.mu.Unlock()
	go e.runTask(ctx, cancel, t)
}

// acquire waits for a task's cores: the driver may queue a few tasks ahead
// of free cores so an executor never idles between tasks, but no more tasks
// run at once than the executor has cores. It fails once the executor is
// draining, so queued tasks go back to the driver instead of delaying exit.
func (e *Executor) acquire(cpus int) bool {
	cpus = min(max(cpus, 1), e.opts.Cores)
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.freeCores < cpus && !e.draining.Load() {
		e.coreFreed.Wait()
	}
	if e.draining.Load() {
		return false
	}
	e.freeCores -= cpus
	return true
}

func (e *Executor) release(cpus int) {
	cpus = min(max(cpus, 1), e.opts.Cores)
	e.mu.Lock()
	e.freeCores += cpus
	e.coreFreed.Signal()
	e.mu.Unlock()
}

func (e *Executor) runTask(ctx context.Context, cancel context.CancelFunc, t *pb.TaskDescription) {
	if !e.acquire(int(t.GetCpus())) {
		cancel()
		e.finish(t.GetTaskId(), &pb.TaskStatus{TaskId: t.GetTaskId(), State: pb.TaskState_TASK_STATE_KILLED, Error: "executor is decommissioning"})
		return
	}
	defer e.release(int(t.GetCpus()))
	start := time.Now()
	o := RunTask(ctx, funcs.Task{
		TaskID:    t.GetTaskId(),
		JobID:     t.GetJobId(),
		StageID:   int(t.GetStageId()),
		Partition: int(t.GetPartition()),
		Attempt:   int(t.GetAttempt()),
		Shuffle:   e.shuffles,
		Store:     e.store.Load(),
	}, t.GetFunc(), t.GetPayload())
	killed := ctx.Err() != nil
	cancel()
	st := &pb.TaskStatus{TaskId: t.GetTaskId(), DurationNanos: int64(time.Since(start))}
	switch {
	case killed:
		st.State = pb.TaskState_TASK_STATE_KILLED
		st.Error = "task killed"
	case o.Err != nil:
		st.State = pb.TaskState_TASK_STATE_FAILED
		st.Error, st.Stack, st.Panicked = o.Err.Error(), o.Stack, o.Panicked
		if ff := o.FetchFailed; ff != nil {
			st.FetchFailure = &pb.FetchFailure{ShuffleId: int32(ff.ShuffleID), MapId: int32(ff.MapID),
				ExecutorId: ff.ExecutorID.String(), Address: ff.Address, Message: ff.Error()}
		}
	default:
		st.State = pb.TaskState_TASK_STATE_FINISHED
		if int64(len(o.Result)) > e.maxDirectResult {
			e.mu.Lock()
			e.results[t.GetTaskId()] = o.Result
			e.mu.Unlock()
			st.Indirect, st.ResultSize = true, int64(len(o.Result))
		} else {
			st.Result = o.Result
		}
	}
	e.finish(t.GetTaskId(), st)
}

func (e *Executor) finish(tid int64, st *pb.TaskStatus) {
	e.out.addStatus(st)
	e.mu.Lock()
	delete(e.running, tid)
	if len(e.running) == 0 {
		e.idle.Broadcast()
	}
	e.mu.Unlock()
}

func (e *Executor) killTask(tid int64, reason string) {
	e.mu.Lock()
	cancel := e.running[tid]
	e.mu.Unlock()
	if cancel != nil {
		e.log.Info("killing task", "task", tid, "reason", reason)
		cancel()
	}
}

func (e *Executor) killAll(reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for tid, cancel := range e.running {
		e.log.Debug("killing task", "task", tid, "reason", reason)
		cancel()
	}
}

func (e *Executor) waitIdle() {
	e.mu.Lock()
	for len(e.running) > 0 {
		e.idle.Wait()
	}
	e.mu.Unlock()
}

func (e *Executor) numRunning() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

func (e *Executor) runningIDs() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]int64, 0, len(e.running))
	for id := range e.running {
		ids = append(ids, id)
	}
	return ids
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

// isPermanent reports registration errors that retrying cannot fix: the
// driver refused this executor.
func isPermanent(err error) bool {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied, codes.FailedPrecondition, codes.InvalidArgument:
		return true
	}
	return false
}
