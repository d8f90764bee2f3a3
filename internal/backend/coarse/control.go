package coarse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

// The control stream of one executor: registration, launches, statuses and
// the results fetched from it.

// Control serves one executor's control stream.
func (b *Backend) Control(stream *ctl.ServerStream) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	// The work runs off this goroutine's stack, which stays small while
	// it waits for the executor (ctl.ServerStream.OffStack).
	var ex *executorData
	stream.OffStack(func() { ex, err = b.start(stream, first) })
	if err != nil {
		return err
	}
	recvErr := b.receiveLoop(stream, ex)
	// The stream must not be sent on once this handler returned: let the
	// sender finish what it has, for a second at most.
	ex.out.close()
	select {
	case <-ex.out.flushed:
	case <-b.opts.Clock.After(time.Second):
	}
	b.disconnected(ex, recvErr)
	return nil
}

// start registers the executor of the stream whose first message is first
// and makes it its first offers.
func (b *Backend) start(stream *ctl.ServerStream, first *pb.ExecutorMessage) (*executorData, error) {
	reg := first.GetRegister()
	if reg == nil {
		return nil, status.Error(codes.InvalidArgument, "the first message on the control stream must be Register")
	}
	peer := peerAddr(stream.Peer())
	ex, err := b.register(reg, peer)
	if err != nil {
		b.log.Warn("executor registration refused", "executor", reg.GetExecutorId(), "peer", stream.Peer(), "err", err)
		return nil, err
	}
	if err := stream.Send(&pb.DriverMessage{Msg: &pb.DriverMessage_Registered{Registered: &pb.Registered{Conf: b.opts.Conf,
		Epoch: b.opts.Epoch}}}); err != nil {
		b.disconnected(ex, err)
		return nil, err
	}
	b.log.Info("executor registered", "executor", ex.ID, "address", ex.Address, "cores", ex.TotalCores, "pod", ex.PodName)
	if held := reg.GetOutputs(); len(held) > 0 && b.opts.Adopt != nil {
		b.log.Info("executor holds map outputs of an earlier attempt", "executor", ex.ID, "attempt", reg.GetEpoch(),
			"outputs", len(held))
	}
	b.changed()

	ex.out.start(stream.Send, stream.Go)
	b.makeOffers(ex.ID)
	return ex, nil
}

// heldOutputs is the map outputs a registration names.
func heldOutputs(held []*pb.HeldMapOutput) []shuffle.HeldOutput {
	out := make([]shuffle.HeldOutput, len(held))
	for i, h := range held {
		out[i] = shuffle.HeldOutput{Lineage: h.GetLineage(), Status: shuffle.MapStatus{ShuffleID: int(h.GetShuffleId()),
			MapID: int(h.GetMapId()), TaskID: h.GetTaskId(), Sizes: h.GetSizes()}}
	}
	return out
}

// peerAddr is the address of a connection's remote end, "ip:port"; the
// zero Addr if it does not parse.
func peerAddr(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// register admits the executor reg describes, whose connection comes from
// peer, and adds it. A peer refused too often is refused at once
// (failureLimiter).
func (b *Backend) register(reg *pb.Register, peer netip.Addr) (*executorData, error) {
	b.mu.Lock()
	allowed := b.failures.allowed(peer, b.opts.Clock.Now())
	b.mu.Unlock()
	if !allowed {
		return nil, status.Errorf(codes.ResourceExhausted, "too many refused registrations from %s: try again later", peer)
	}
	ex, err := b.admitAndAdd(reg, peer)
	if err != nil {
		b.mu.Lock()
		// Not counted: refusals for now (Unavailable: ErrNotYet), and
		// those of a driver that is stopping.
		if status.Code(err) != codes.Unavailable && !b.stopped {
			b.failures.failed(peer, b.opts.Clock.Now())
		}
		b.mu.Unlock()
	}
	return ex, err
}

// checkLocked refuses what the backend itself refuses of a registration;
// the caller holds b.mu.
func (b *Backend) checkLocked(id executorid.ID, reg *pb.Register) error {
	switch {
	case b.stopped:
		return status.Error(codes.FailedPrecondition, "the application is shutting down")
	case reg.GetAppId() != b.opts.AppID:
		return status.Errorf(codes.PermissionDenied, "executor belongs to application %q, not %q", reg.GetAppId(), b.opts.AppID)
	case b.excluded.has(id):
		return status.Errorf(codes.FailedPrecondition, "executor %s was removed and may not register again", id)
	case b.executors[id] != nil:
		return status.Errorf(codes.AlreadyExists, "executor %s is already registered", id)
	case reg.GetCores() < 1:
		return status.Errorf(codes.InvalidArgument, "executor %s offers %d cores", id, reg.GetCores())
	}
	return nil
}

func (b *Backend) admitAndAdd(reg *pb.Register, peer netip.Addr) (*executorData, error) {
	id, err := executorid.Parse(reg.GetExecutorId())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	b.mu.Lock()
	err = b.checkLocked(id, reg)
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	// The hook may wait (for the pod watch to see the pod's address):
	// not under the lock, and the checks above are made again after it.
	// A peer has at most maxAdmittingPerPeer registrations in it at once:
	// the control transport stops counting a connection against its peer
	// once the Register is read, and each wait holds a connection and a
	// goroutine for up to the hook's bound.
	if b.opts.Admit != nil {
		b.mu.Lock()
		if b.admitting[peer] >= maxAdmittingPerPeer {
			b.mu.Unlock()
			return nil, status.Errorf(codes.Unavailable, "%d registrations from %s are being decided: try again", maxAdmittingPerPeer, peer)
		}
		if b.admitting == nil {
			b.admitting = map[netip.Addr]int{}
		}
		b.admitting[peer]++
		b.mu.Unlock()
		err := b.opts.Admit(b.runCtx, Registration{ID: id, PodName: reg.GetPodName(), Peer: peer, Address: reg.GetAddress()})
		b.mu.Lock()
		if b.admitting[peer]--; b.admitting[peer] == 0 {
			delete(b.admitting, peer)
		}
		b.mu.Unlock()
		switch {
		case err == nil:
		case errors.Is(err, ErrGone):
			b.mu.Lock()
			b.excluded.add(id)
			b.mu.Unlock()
			return nil, status.Errorf(codes.FailedPrecondition, "executor %s refused: %v", id, err)
		case errors.Is(err, ErrNotYet):
			return nil, status.Errorf(codes.Unavailable, "executor %s not admitted yet: %v", id, err)
		default:
			return nil, status.Errorf(codes.PermissionDenied, "executor %s refused: %v", id, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.checkLocked(id, reg); err != nil {
		return nil, err
	}
	ex := &executorData{
		ExecutorInfo: ExecutorInfo{
			ID:         id,
			Address:    reg.GetAddress(),
			PodName:    reg.GetPodName(),
			TotalCores: int(reg.GetCores()),
			FreeCores:  int(reg.GetCores()),
		},
		out: newOutbox(b.opts.MaxLaunchBytes),
	}
	ex.registeredAt = b.opts.Clock.Now()
	ex.acked = ex.registeredAt
	ex.lastSeen.Store(ex.registeredAt.UnixNano())
	// Before the executor is seen registered, offered tasks or announced:
	// a restarted driver waits until its executors registered again, then
	// decides what to compute from what they hold. Adopt only records.
	if held := reg.GetOutputs(); len(held) > 0 && b.opts.Adopt != nil {
		b.opts.Adopt(id, ex.Address, heldOutputs(held))
	}
	b.executors[id] = ex
	b.totalCores += ex.TotalCores
	b.opts.Events.Publish(&events.ExecutorAdded{Header: events.Header{Time: ex.registeredAt}, Executor: id,
		Address: ex.Address, Pod: ex.PodName, Cores: ex.TotalCores})
	close(b.registered)
	b.registered = make(chan struct{})
	return ex, nil
}

func (b *Backend) receiveLoop(stream *ctl.ServerStream, ex *executorData) error {
	for {
		msg, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		ex.lastSeen.Store(b.opts.Clock.Now().UnixNano())
		stream.OffStack(func() { b.handle(ex, msg) })
	}
}

// handle acts on one message of the executor's stream.
func (b *Backend) handle(ex *executorData, msg *pb.ExecutorMessage) {
	switch m := msg.GetMsg().(type) {
	case *pb.ExecutorMessage_Status:
		b.statusUpdate(ex, m.Status)
	case *pb.ExecutorMessage_Heartbeat:
		b.mu.Lock()
		known := b.executors[ex.ID] == ex
		b.mu.Unlock()
		now := b.opts.Clock.Now()
		if known && !ackDue(ex.acked, now, b.opts.NetworkTimeout) {
			return
		}
		ex.acked = now
		ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_HeartbeatAck{HeartbeatAck: &pb.HeartbeatAck{Reregister: !known}}})
	case *pb.ExecutorMessage_Decommission:
		b.log.Info("executor decommissioning", "executor", ex.ID, "reason", m.Decommission.GetReason())
		b.mu.Lock()
		ex.decommissioning = true
		b.mu.Unlock()
	}
}

// ackDue reports whether a heartbeat of a known executor is answered: an
// executor gives up on a driver it has not heard from for
// spark.network.timeout, so the driver answers once a quarter of that has
// passed since its last answer, not every heartbeat (every 10 s by
// default): each answer is a write, and thousands of idle executors
// register and heartbeat while an application starts.
func ackDue(last, now time.Time, networkTimeout time.Duration) bool {
	return now.Sub(last) >= networkTimeout/4
}

func (b *Backend) statusUpdate(ex *executorData, batch *pb.StatusBatch) {
	statuses := batch.GetStatuses()
	ids, nanos := batch.GetFinishedTaskIds(), batch.GetFinishedNanos()
	if len(ids) != len(nanos) {
		b.log.Warn("executor sent a status batch whose finished tasks and durations differ in number; durations ignored",
			"executor", ex.ID, "tasks", len(ids), "durations", len(nanos))
		nanos = nil
	}
	out := make([]scheduler.Status, 0, len(statuses)+len(ids))
	type fetch struct {
		st   scheduler.Status
		size int64
	}
	var fetches []fetch
	// Only the ends of tasks launched on this executor count: a report of
	// any other (a bug, a duplicate, a task of another executor) neither
	// ends that task nor frees cores here.
	b.mu.Lock()
	freed, ignored := 0, 0
	own := func(id int64) bool {
		cpus, ok := ex.running[id]
		if ok {
			delete(ex.running, id)
			freed += cpus
		} else {
			ignored++
		}
		return ok
	}
	for i, id := range ids {
		if !own(id) {
			continue
		}
		st := scheduler.Status{TaskID: id, ExecutorID: ex.ID, State: scheduler.Finished}
		if nanos != nil {
			st.Duration = time.Duration(nanos[i])
		}
		out = append(out, st)
	}
	for _, s := range statuses {
		// The executor's object-store retries, into the driver's counter.
		objstore.AddRetries(s.GetMetrics().GetStoreRetries())
		st := fromProto(ex.ID, s)
		if st.State == scheduler.Running || !own(st.TaskID) {
			continue
		}
		if s.GetIndirect() && st.State == scheduler.Finished {
			fetches = append(fetches, fetch{st, s.GetResultSize()})
			continue
		}
		out = append(out, st)
	}
	if freed > 0 && b.executors[ex.ID] == ex {
		// Never more than the executor has.
		ex.FreeCores = min(ex.FreeCores+freed, ex.TotalCores)
	}
	b.mu.Unlock()
	if ignored > 0 {
		b.log.Warn("executor reported the end of tasks it was not running; ignored", "executor", ex.ID, "tasks", ignored)
	}
	if b.log.Enabled(context.Background(), slog.LevelDebug) {
		for _, st := range out {
			b.log.Debug("task status", "executor", ex.ID, "task", st.TaskID, "state", st.State.String(), "err", st.Err)
		}
	}
	for _, f := range fetches {
		b.goTracked(func(ctx context.Context) { b.fetchResult(ctx, ex, f.st, f.size) })
	}
	b.sched.StatusUpdates(out)
	b.makeOffers(ex.ID)
}

func fromProto(executorID executorid.ID, s *pb.TaskStatus) scheduler.Status {
	st := scheduler.Status{
		TaskID:     s.GetTaskId(),
		ExecutorID: executorID,
		Result:     s.GetResult(),
		Err:        s.GetError(),
		Stack:      s.GetStack(),
		Panicked:   s.GetPanicked(),
		Duration:   time.Duration(s.GetDurationNanos()),
	}
	if m := s.GetMetrics(); m != nil {
		st.Metrics = events.TaskMetrics{
			InputBytes: m.GetInputBytes(), InputRecords: m.GetInputRecords(),
			OutputBytes: m.GetOutputBytes(), OutputRecords: m.GetOutputRecords(),
			ShuffleReadBytes: m.GetShuffleReadBytes(), ShuffleReadRecords: m.GetShuffleReadRecords(),
			ShuffleWriteBytes: m.GetShuffleWriteBytes(), ShuffleWriteRecords: m.GetShuffleWriteRecords(),
			SpillBytes: m.GetSpillBytes(),
		}
	}
	if ff := s.GetFetchFailure(); ff != nil {
		// An id that does not parse names no executor: no output is
		// dropped for it, and the stage is retried all the same.
		holder, _ := executorid.Parse(ff.GetExecutorId())
		st.FetchFailed = &scheduler.FetchFailedError{ShuffleID: int(ff.GetShuffleId()), MapID: int(ff.GetMapId()),
			ExecutorID: holder, Address: ff.GetAddress(), Message: ff.GetMessage()}
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

// resultFetchers is how many results are fetched at once, as Spark's
// spark.resultGetter.threads: the driver's memory for results in flight is
// bounded by it and by spark.driver.maxResultSize.
const resultFetchers = 4

// fetchResult pulls a result the executor kept because it was too large for
// the control stream, then reports the task. The declared size is checked
// first: a negative one fails the task, and one that would take the task
// set over spark.driver.maxResultSize aborts it before any byte is read.
func (b *Backend) fetchResult(ctx context.Context, ex *executorData, st scheduler.Status, size int64) {
	switch {
	case size < 0:
		st.State, st.Err = scheduler.Failed, fmt.Sprintf("executor %s declared a result of %d bytes", ex.ID, size)
	case !b.sched.CanFetchResult(st.TaskID, size):
		st.State, st.Err = scheduler.Failed, fmt.Sprintf("the %d-byte result on executor %s was not fetched", size, ex.ID)
	default:
		select {
		case b.fetchers <- struct{}{}:
		case <-ctx.Done():
			return
		}
		data, err := b.fetch(ctx, ex, st.TaskID, size)
		<-b.fetchers
		if err != nil {
			st.State, st.Err = scheduler.Failed, fmt.Sprintf("fetching the task's result from executor %s: %v", ex.ID, err)
		} else {
			st.Result = data
		}
	}
	b.sched.StatusUpdates([]scheduler.Status{st})
}

// maxPrealloc caps the buffer allocated from a declared size before the
// data arrives; the buffer grows with what really comes.
const maxPrealloc = 16 << 20

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
	data := make([]byte, 0, min(size, maxPrealloc))
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if int64(len(data)+len(c.GetData())) > size {
			return nil, fmt.Errorf("the executor sent more than the %d bytes it declared", size)
		}
		data = append(data, c.GetData()...)
	}
	if int64(len(data)) != size {
		return nil, fmt.Errorf("got %d bytes of a %d-byte result", len(data), size)
	}
	return data, nil
}
