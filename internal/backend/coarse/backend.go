package coarse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/scheduler"
)

// ConfOptions are the options every cluster manager takes from the
// application's configuration; the caller adds its addresses, executor
// counts, hooks and logger.
func ConfOptions(appID string, conf *config.Conf, auth rpc.Auth) Options {
	return Options{
		AppID:              appID,
		Conf:               conf.Explicit(),
		Auth:               auth,
		MaxRegisteredWait:  config.MaxRegisteredResourcesWaitingTime.Get(conf),
		DefaultParallelism: config.DefaultParallelism.Get(conf),
		Prefetch:           config.SchedulerPrefetch.Get(conf),
		NetworkTimeout:     config.NetworkTimeout.Get(conf),
		TimeoutInterval:    config.NetworkTimeoutInterval.Get(conf),
	}
}

// Options configures a Backend.
type Options struct {
	AppID string
	// Conf is the application's explicitly set configuration, sent to each
	// executor when it registers.
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

	// NetworkTimeout removes an executor not heard from for that long,
	// checked every TimeoutInterval.
	NetworkTimeout  time.Duration
	TimeoutInterval time.Duration

	// Admit, when set, may refuse an executor's registration: Kubernetes
	// refuses executors whose pods it already deleted.
	Admit func(executorID, podName string) error
	// OnExecutorsChanged, when set, is called after an executor registers
	// or is removed, without the backend's lock held.
	OnExecutorsChanged func()

	Clock  clock.WithTicker
	Logger *slog.Logger
}

// ClusterManager is the part of a cluster manager the backend consults.
type ClusterManager interface {
	// ExitReason blocks until the cluster manager knows why an executor's
	// connection ended (its process exited, its pod failed) or ctx ends.
	ExitReason(ctx context.Context, executorID string) (scheduler.LossReason, bool)
	// ExecutorRemoved tells the cluster manager the driver stopped using an
	// executor, so it can release or replace it.
	ExecutorRemoved(executorID string, reason scheduler.LossReason)
}

// ExecutorInfo describes a registered executor.
type ExecutorInfo struct {
	ID         string
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
	registeredAt    time.Time
	fetchConn       *grpc.ClientConn
}

// Backend is the coarse-grained scheduler backend.
type Backend struct {
	opts    Options
	sched   *scheduler.Scheduler
	log     *slog.Logger
	cluster ClusterManager

	server   *grpc.Server
	listener net.Listener
	revive   chan struct{}
	stopCh   chan struct{}
	// runCtx ends when Stop begins: goroutines started with goTracked
	// (result fetches, waits for an exit reason) stop with it, and Stop
	// waits for them.
	runCtx    context.Context
	cancelRun context.CancelFunc
	wg        sync.WaitGroup

	mu         sync.Mutex
	executors  map[string]*executorData
	excluded   map[string]bool // killed or lost: may not register again
	registered chan struct{}   // closed and replaced whenever an executor registers
	// reachable is how many executors the cluster manager can have for
	// now, < 0 for no limit; capped is closed and replaced when it changes.
	reachable  int
	capped     chan struct{}
	stopped    bool
	totalCores int

	pb.UnimplementedDriverServer
}

var (
	_ backend.SchedulerBackend = (*Backend)(nil)
	_ backend.ExecutorRegistry = (*Backend)(nil)
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
		executors:  map[string]*executorData{},
		excluded:   map[string]bool{},
		registered: make(chan struct{}),
		reachable:  -1,
		capped:     make(chan struct{}),
	}
}

// Start listens for executors.
func (b *Backend) Start(ctx context.Context) error {
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", net.JoinHostPort(b.opts.BindAddress, strconv.Itoa(b.opts.Port)))
	if err != nil {
		return fmt.Errorf("listening on spark.driver.bindAddress %s port %d: %w", b.opts.BindAddress, b.opts.Port, err)
	}
	b.listener = lis
	b.server = grpc.NewServer(rpc.ServerOptions(b.opts.Auth)...)
	pb.RegisterDriverServer(b.server, b)
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

// ReviveOffers makes offers for every executor's free cores soon.
func (b *Backend) ReviveOffers() {
	select {
	case b.revive <- struct{}{}:
	default:
	}
}

func (b *Backend) reviveLoop() {
	for {
		select {
		case <-b.stopCh:
			return
		case <-b.revive:
			b.makeOffers("")
		}
	}
}

// makeOffers offers the free cores of one executor, or of all when id is
// empty, and sends the resulting launches.
func (b *Backend) makeOffers(id string) {
	cpus := b.sched.CPUsPerTask()
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	extra := b.prefetchLocked()
	var offers []scheduler.Offer
	add := func(ex *executorData) {
		if n := ex.FreeCores + extra*ex.TotalCores; !ex.disabled && !ex.decommissioning && n >= cpus {
			offers = append(offers, scheduler.Offer{ExecutorID: ex.ID, Cores: n})
		}
	}
	if id != "" {
		if ex := b.executors[id]; ex != nil {
			add(ex)
		}
	} else {
		for _, ex := range b.executors {
			add(ex)
		}
	}
	if len(offers) == 0 {
		b.mu.Unlock()
		return
	}
	tasks := b.sched.ResourceOffers(offers)
	batches := map[*executorData]*pb.LaunchBatch{}
	for i := range tasks {
		t := &tasks[i]
		ex := b.executors[t.ExecutorID]
		ex.FreeCores -= t.CPUs
		lb := batches[ex]
		if lb == nil {
			lb = &pb.LaunchBatch{}
			batches[ex] = lb
		}
		lb.Tasks = append(lb.Tasks, &pb.TaskDescription{
			TaskId:       t.TaskID,
			JobId:        t.JobID,
			StageId:      int32(t.StageID),
			StageAttempt: int32(t.StageAttempt),
			Partition:    int32(t.Partition),
			Attempt:      int32(t.Attempt),
			Func:         t.Func,
			Payload:      t.Payload,
			Cpus:         int32(t.CPUs),
		})
	}
	b.mu.Unlock()
	for ex, lb := range batches {
		ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_Launch{Launch: lb}})
	}
}

// prefetchLocked is how many tasks per core to queue ahead of free cores:
// Options.Prefetch while more tasks wait than all executors have free cores
// (every executor will be busy anyway, so queueing cannot starve one), else
// none, so a short job spreads over every executor.
func (b *Backend) prefetchLocked() int {
	if b.opts.Prefetch <= 0 {
		return 0
	}
	free := 0
	for _, ex := range b.executors {
		if !ex.disabled && !ex.decommissioning && ex.FreeCores > 0 {
			free += ex.FreeCores
		}
	}
	if b.sched.PendingTasks() <= free {
		return 0
	}
	return b.opts.Prefetch
}

// KillTask asks an executor to stop a task.
func (b *Backend) KillTask(taskID int64, executorID, reason string) {
	b.mu.Lock()
	ex := b.executors[executorID]
	b.mu.Unlock()
	if ex != nil {
		ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_Kill{Kill: &pb.KillTask{TaskId: taskID, Reason: reason}}})
	}
}

// RemoveShuffles tells every executor to delete its map outputs of the
// given shuffles. Executors without any ignore it; it costs one small
// message each, as Spark's broadcast to every block manager does.
func (b *Backend) RemoveShuffles(ids []int) {
	msg := &pb.RemoveShuffles{ShuffleIds: make([]int64, len(ids))}
	for i, id := range ids {
		msg.ShuffleIds[i] = int64(id)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ex := range b.executors {
		ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_RemoveShuffles{RemoveShuffles: msg}})
	}
}

// Control serves one executor's control stream.
func (b *Backend) Control(stream pb.Driver_ControlServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	reg := first.GetRegister()
	if reg == nil {
		return status.Error(codes.InvalidArgument, "the first message on the control stream must be Register")
	}
	ex, err := b.register(reg)
	if err != nil {
		b.log.Warn("executor registration refused", "executor", reg.GetExecutorId(), "err", err)
		return err
	}
	if err := stream.Send(&pb.DriverMessage{Msg: &pb.DriverMessage_Registered{Registered: &pb.Registered{Conf: b.opts.Conf}}}); err != nil {
		b.disconnected(ex, err)
		return err
	}
	b.log.Info("executor registered", "executor", ex.ID, "address", ex.Address, "cores", ex.TotalCores, "pod", ex.PodName)
	b.changed()

	sendDone := make(chan error, 1)
	go func() { sendDone <- b.sendLoop(stream, ex) }()
	b.makeOffers(ex.ID)

	recvErr := b.receiveLoop(stream, ex)
	ex.out.close()
	select {
	case <-sendDone:
	case <-time.After(time.Second):
	}
	b.disconnected(ex, recvErr)
	return nil
}

func (b *Backend) register(reg *pb.Register) (*executorData, error) {
	id := reg.GetExecutorId()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.stopped:
		return nil, status.Error(codes.FailedPrecondition, "the application is shutting down")
	case reg.GetAppId() != b.opts.AppID:
		return nil, status.Errorf(codes.PermissionDenied, "executor belongs to application %q, not %q", reg.GetAppId(), b.opts.AppID)
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "empty executor id")
	case b.excluded[id]:
		return nil, status.Errorf(codes.FailedPrecondition, "executor %s was removed and may not register again", id)
	case b.executors[id] != nil:
		return nil, status.Errorf(codes.AlreadyExists, "executor %s is already registered", id)
	case reg.GetCores() < 1:
		return nil, status.Errorf(codes.InvalidArgument, "executor %s offers %d cores", id, reg.GetCores())
	}
	if b.opts.Admit != nil {
		if err := b.opts.Admit(id, reg.GetPodName()); err != nil {
			b.excluded[id] = true
			return nil, status.Errorf(codes.FailedPrecondition, "executor %s refused: %v", id, err)
		}
	}
	ex := &executorData{
		ExecutorInfo: ExecutorInfo{
			ID:         id,
			Address:    reg.GetAddress(),
			PodName:    reg.GetPodName(),
			TotalCores: int(reg.GetCores()),
			FreeCores:  int(reg.GetCores()),
		},
		out: newOutbox(),
	}
	ex.registeredAt = b.opts.Clock.Now()
	ex.lastSeen.Store(ex.registeredAt.UnixNano())
	b.executors[id] = ex
	b.totalCores += ex.TotalCores
	close(b.registered)
	b.registered = make(chan struct{})
	return ex, nil
}

func (b *Backend) sendLoop(stream pb.Driver_ControlServer, ex *executorData) error {
	for range ex.out.notify {
		for _, m := range ex.out.take() {
			if err := stream.Send(m); err != nil {
				return err
			}
		}
	}
	for _, m := range ex.out.take() {
		if err := stream.Send(m); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) receiveLoop(stream pb.Driver_ControlServer, ex *executorData) error {
	for {
		msg, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		ex.lastSeen.Store(b.opts.Clock.Now().UnixNano())
		switch m := msg.GetMsg().(type) {
		case *pb.ExecutorMessage_Status:
			b.statusUpdate(ex, m.Status.GetStatuses())
		case *pb.ExecutorMessage_Heartbeat:
			b.mu.Lock()
			known := b.executors[ex.ID] == ex
			b.mu.Unlock()
			ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_HeartbeatAck{HeartbeatAck: &pb.HeartbeatAck{Reregister: !known}}})
		case *pb.ExecutorMessage_Decommission:
			b.log.Info("executor decommissioning", "executor", ex.ID, "reason", m.Decommission.GetReason())
			b.mu.Lock()
			ex.decommissioning = true
			b.mu.Unlock()
		}
	}
}

func (b *Backend) statusUpdate(ex *executorData, statuses []*pb.TaskStatus) {
	out := make([]scheduler.Status, 0, len(statuses))
	terminal := 0
	for _, s := range statuses {
		st := fromProto(ex.ID, s)
		b.log.Debug("task status", "executor", ex.ID, "task", st.TaskID, "state", st.State.String(), "err", st.Err)
		if st.State == scheduler.Running {
			continue
		}
		terminal++
		if s.GetIndirect() && st.State == scheduler.Finished {
			size := s.GetResultSize()
			b.goTracked(func(ctx context.Context) { b.fetchResult(ctx, ex, st, size) })
			continue
		}
		out = append(out, st)
	}
	if terminal > 0 {
		b.mu.Lock()
		if b.executors[ex.ID] == ex {
			ex.FreeCores += terminal * b.sched.CPUsPerTask()
		}
		b.mu.Unlock()
	}
	b.sched.StatusUpdates(out)
	b.makeOffers(ex.ID)
}

func fromProto(executorID string, s *pb.TaskStatus) scheduler.Status {
	st := scheduler.Status{
		TaskID:     s.GetTaskId(),
		ExecutorID: executorID,
		Result:     s.GetResult(),
		Err:        s.GetError(),
		Stack:      s.GetStack(),
		Panicked:   s.GetPanicked(),
		Duration:   time.Duration(s.GetDurationNanos()),
	}
	if ff := s.GetFetchFailure(); ff != nil {
		st.FetchFailed = &scheduler.FetchFailedError{ShuffleID: int(ff.GetShuffleId()), MapID: int(ff.GetMapId()),
			ExecutorID: ff.GetExecutorId(), Address: ff.GetAddress(), Message: ff.GetMessage()}
	}
	switch s.GetState() {
	case pb.TaskState_TASK_STATE_FINISHED:
		st.State = scheduler.Finished
	case pb.TaskState_TASK_STATE_FAILED:
		st.State = scheduler.Failed
	case pb.TaskState_TASK_STATE_KILLED:
		st.State = scheduler.Killed
	default:
		st.State = scheduler.Running
	}
	return st
}

// fetchResult pulls a result the executor kept because it was too large for
// the control stream, then reports the task.
func (b *Backend) fetchResult(ctx context.Context, ex *executorData, st scheduler.Status, size int64) {
	data, err := b.fetch(ctx, ex, st.TaskID, size)
	if err != nil {
		st.State, st.Err = scheduler.Failed, fmt.Sprintf("fetching the task's result from executor %s: %v", ex.ID, err)
	} else {
		st.Result = data
	}
	b.sched.StatusUpdates([]scheduler.Status{st})
}

func (b *Backend) fetch(ctx context.Context, ex *executorData, taskID, size int64) ([]byte, error) {
	b.mu.Lock()
	conn := ex.fetchConn
	if conn == nil {
		var err error
		conn, err = grpc.NewClient(ex.Address, rpc.DialOptions(b.opts.Auth)...)
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		ex.fetchConn = conn
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, b.opts.NetworkTimeout)
	defer cancel()
	stream, err := pb.NewExecutorClient(conn).FetchResult(ctx, &pb.FetchResultRequest{TaskId: taskID})
	if err != nil {
		return nil, err
	}
	data := make([]byte, 0, size)
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		data = append(data, c.GetData()...)
	}
	if int64(len(data)) != size {
		return nil, fmt.Errorf("got %d bytes of a %d-byte result", len(data), size)
	}
	return data, nil
}

// Decommissioned is the loss message of an executor that left on its own
// after a decommission (SIGTERM to its process, or the driver's request).
const Decommissioned = "executor decommissioned"

// disconnected handles the end of an executor's control stream. The cluster
// manager, if it can, says why the executor went away; that decides whether
// its running tasks count as failed.
func (b *Backend) disconnected(ex *executorData, err error) {
	b.mu.Lock()
	current := b.executors[ex.ID] == ex
	stopped := b.stopped
	decom := ex.decommissioning
	ex.disabled = true
	b.mu.Unlock()
	if !current || stopped {
		return
	}
	reason := scheduler.LossReason{Message: "executor disconnected"}
	if err != nil {
		reason.Message = fmt.Sprintf("executor disconnected: %v", err)
	}
	if decom {
		reason = scheduler.LossReason{Message: Decommissioned}
	}
	if b.cluster == nil || decom {
		b.RemoveExecutor(ex.ID, reason)
		return
	}
	b.goTracked(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, exitReasonWait)
		defer cancel()
		if r, ok := b.cluster.ExitReason(ctx, ex.ID); ok {
			reason = r
		}
		b.RemoveExecutor(ex.ID, reason)
	})
}

// exitReasonWait bounds the wait for the cluster manager to say why an
// executor's connection ended: pod events usually tell within a second.
const exitReasonWait = 10 * time.Second

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

// RemoveExecutor forgets an executor, resubmits its running tasks and keeps
// it from registering again.
func (b *Backend) RemoveExecutor(id string, reason scheduler.LossReason) {
	b.mu.Lock()
	ex := b.executors[id]
	b.excluded[id] = true
	if ex != nil {
		delete(b.executors, id)
		b.totalCores -= ex.TotalCores
		ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_Shutdown{Shutdown: &pb.Shutdown{Reason: reason.String()}}})
		ex.out.close()
		if ex.fetchConn != nil {
			_ = ex.fetchConn.Close()
		}
	}
	b.mu.Unlock()
	if ex == nil {
		return
	}
	b.log.Info("executor removed", "executor", id, "reason", reason.String(), "caused_by_app", reason.CausedByApp)
	b.changed()
	b.sched.ExecutorLost(id, reason)
	if b.cluster != nil {
		b.cluster.ExecutorRemoved(id, reason)
	}
}

func (b *Backend) changed() {
	if b.opts.OnExecutorsChanged != nil {
		b.opts.OnExecutorsChanged()
	}
}

// ExcludeExecutor keeps an executor id from registering, for executors whose
// pod or process the cluster manager deleted before they registered.
func (b *Backend) ExcludeExecutor(id string) {
	b.mu.Lock()
	b.excluded[id] = true
	b.mu.Unlock()
}

// expiryLoop removes executors the driver has not heard from for
// spark.network.timeout, checking every spark.network.timeoutInterval.
func (b *Backend) expiryLoop() {
	t := b.opts.Clock.NewTicker(b.opts.TimeoutInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stopCh:
			return
		case <-t.C():
		}
		b.ExpireDeadExecutors()
	}
}

// ExpireDeadExecutors removes the executors whose last message is older
// than spark.network.timeout.
func (b *Backend) ExpireDeadExecutors() {
	now := b.opts.Clock.Now()
	b.mu.Lock()
	last := make(map[string]time.Time, len(b.executors))
	for id, ex := range b.executors {
		last[id] = time.Unix(0, ex.lastSeen.Load())
	}
	b.mu.Unlock()
	for _, id := range Expired(last, now, b.opts.NetworkTimeout) {
		b.RemoveExecutor(id, scheduler.LossReason{
			Message: fmt.Sprintf("executor heartbeat timed out after %s (spark.network.timeout)", b.opts.NetworkTimeout),
		})
	}
}

// Expired returns, sorted, the executors last heard from more than timeout
// before now.
func Expired(lastSeen map[string]time.Time, now time.Time, timeout time.Duration) []string {
	var ids []string
	for id, t := range lastSeen {
		if now.Sub(t) > timeout {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// SufficientResourcesRegistered reports whether registered executors reach
// spark.scheduler.minRegisteredResourcesRatio of the initial target.
func (b *Backend) SufficientResourcesRegistered() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return sufficient(len(b.executors), b.opts.InitialExecutors, b.opts.MinRegisteredRatio)
}

func sufficient(registered, initial int, ratio float64) bool {
	return float64(registered) >= float64(initial)*ratio
}

// WaitReady blocks until SufficientResourcesRegistered or until
// spark.scheduler.maxRegisteredResourcesWaitingTime has passed.
func (b *Backend) WaitReady(ctx context.Context) error {
	timeout := b.opts.Clock.After(b.opts.MaxRegisteredWait)
	for {
		b.mu.Lock()
		wanted := b.opts.InitialExecutors
		if b.reachable >= 0 {
			wanted = min(wanted, b.reachable)
		}
		ok := sufficient(len(b.executors), wanted, b.opts.MinRegisteredRatio)
		ch, capped := b.registered, b.capped
		n := len(b.executors)
		b.mu.Unlock()
		if ok {
			if wanted < b.opts.InitialExecutors {
				b.log.Info("starting without all executors: the cluster manager cannot create more for now",
					"registered", n, "wanted", b.opts.InitialExecutors, "reachable", wanted)
			}
			return nil
		}
		select {
		case <-capped:
		case <-ch:
		case <-timeout:
			b.log.Info("starting without all executors: spark.scheduler.maxRegisteredResourcesWaitingTime passed",
				"registered", n, "wanted", b.opts.InitialExecutors)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// LimitExecutors tells WaitReady how many executors the cluster manager
// can have for now (a quota, an id maximum), so it stops waiting for
// registrations that cannot come; n < 0 lifts the limit.
func (b *Backend) LimitExecutors(n int) {
	b.mu.Lock()
	b.reachable = n
	close(b.capped)
	b.capped = make(chan struct{})
	b.mu.Unlock()
}

// DefaultParallelism is spark.default.parallelism or the registered cores.
func (b *Backend) DefaultParallelism() int {
	if b.opts.DefaultParallelism > 0 {
		return b.opts.DefaultParallelism
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.totalCores, 2)
}

// Registered returns the registered executors' ids with their registration
// times.
func (b *Backend) Registered() map[string]time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]time.Time, len(b.executors))
	for id, ex := range b.executors {
		out[id] = ex.registeredAt
	}
	return out
}

// ExecutorIDs lists the registered executors' ids, sorted.
func (b *Backend) ExecutorIDs() []string {
	infos := b.Executors()
	ids := make([]string, len(infos))
	for i, e := range infos {
		ids[i] = e.ID
	}
	return ids
}

// Executors lists the registered executors, sorted by id.
func (b *Backend) Executors() []ExecutorInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]ExecutorInfo, 0, len(b.executors))
	for _, ex := range b.executors {
		out = append(out, ex.ExecutorInfo)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
