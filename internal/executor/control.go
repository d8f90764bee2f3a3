package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/settings"
	"github.com/drover-project/drover/internal/shuffle"
)

// Registration retries back off from 50 ms to firstBackoff while the
// driver starts, and to reconnectBackoff, with jitter, once it was lost:
// a driver restarted in its pod is back within a second or so, and every
// executor waiting the whole of a long back-off past that point delays
// the whole restarted application. The jitter keeps executors that lost
// the driver at one moment from knocking at one moment.
const (
	firstBackoff     = 2 * time.Second
	reconnectBackoff = 250 * time.Millisecond
)

// register opens the control stream and waits for the driver's reply,
// retrying until spark.network.timeout: a driver that is still starting is
// not a failure. A SIGTERM (ctx) before registration ends the attempt.
// again says the executor lost the driver it was registered with.
func (e *Executor) register(ctx context.Context, addr string, again bool) (*ctl.ClientStream, error) {
	deadline := e.opts.Clock.Now().Add(e.networkTimeout)
	backoff, maxBackoff := 50*time.Millisecond, firstBackoff
	if again {
		maxBackoff = reconnectBackoff
	}
	for {
		stream, err := e.tryRegister(deadline, addr)
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
		var wait time.Duration
		wait, backoff = retryWait(backoff, maxBackoff, again)
		select {
		case <-e.opts.Clock.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// tryRegister is one attempt: connect, register, wait for the reply. The
// attempt ends at the registration deadline (a second at least), so that a
// driver that accepts the connection but never answers is not waited for
// beyond it.
func (e *Executor) tryRegister(deadline time.Time, addr string) (*ctl.ClientStream, error) {
	ctx, cancel := context.WithTimeout(context.Background(), max(deadline.Sub(e.opts.Clock.Now()), time.Second))
	defer cancel()
	stream, err := e.dial(ctx, ctl.Options{WriteTimeout: e.networkTimeout})
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = stream.Close()
		}
	}()
	// The reply is awaited until the attempt ends.
	stop := context.AfterFunc(ctx, func() { _ = stream.Close() })
	defer stop()
	err = stream.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: &pb.Register{
		AppId:       e.opts.AppID,
		ExecutorId:  e.opts.ExecutorID.String(),
		Address:     addr,
		Cores:       int32(e.opts.Cores),
		PodName:     e.opts.PodName,
		MemoryBytes: e.opts.MemoryBytes,
		Epoch:       e.epoch.Load(),
		Outputs:     e.heldOutputs(),
	}}})
	if err != nil {
		return nil, err
	}
	msg, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if !stop() {
		return nil, fmt.Errorf("no answer from the driver: %w", ctx.Err())
	}
	reg := msg.GetRegistered()
	if reg == nil {
		return nil, fmt.Errorf("driver answered registration with %T", msg.GetMsg())
	}
	// A driver of an older attempt than one obeyed before is a zombie
	// (frozen, then thawed, after its replacement started): never obeyed.
	if obeyed := e.epoch.Load(); reg.GetEpoch() < obeyed {
		return nil, fmt.Errorf("the driver answering is attempt %d; this executor obeys attempt %d or later", reg.GetEpoch(), obeyed)
	}
	e.epoch.Store(reg.GetEpoch())
	ok = true
	e.touch()
	e.applyConf(reg.GetConf())
	return stream, nil
}

// heldOutputs is the map outputs the executor holds, as its registration
// names them.
func (e *Executor) heldOutputs() []*pb.HeldMapOutput {
	var held []shuffle.HeldOutput
	if e.shuffles != nil {
		held = e.shuffles.Held()
	}
	if len(held) == 0 {
		return nil
	}
	out := make([]*pb.HeldMapOutput, len(held))
	for i, h := range held {
		out[i] = &pb.HeldMapOutput{Lineage: h.Lineage, ShuffleId: int32(h.Status.ShuffleID), MapId: int32(h.Status.MapID),
			TaskId: h.Status.TaskID, Sizes: h.Status.Sizes}
	}
	return out
}

// dialTimeout bounds connecting to the driver and the TLS handshake, as
// ctl.Dial's default handshake timeout does.
const dialTimeout = 20 * time.Second

// dial opens the control stream to the driver, as ctl.Dial does, from the
// executor's own address (Options.BindHost) when it was given one: a
// Kubernetes driver admits an executor only from its pod's IP, and a
// connection from a pod on the host network, or from a process node's
// loopback pod IP, would leave from another address of the machine.
func (e *Executor) dial(ctx context.Context, opts ctl.Options) (*ctl.ClientStream, error) {
	if e.localAddr == nil {
		return ctl.Dial(ctx, e.opts.DriverURL, e.opts.Auth, opts)
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	d := net.Dialer{KeepAliveConfig: ctl.KeepAlive, LocalAddr: e.localAddr}
	raw, err := d.DialContext(dctx, "tcp", e.opts.DriverURL)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "connecting to %s from %s: %v", e.opts.DriverURL, e.localAddr.IP, err)
	}
	nc, err := e.opts.Auth.ClientHandshake(dctx, e.opts.DriverURL, raw)
	if err != nil {
		_ = raw.Close()
		return nil, status.Errorf(codes.Unavailable, "TLS handshake with %s: %v", e.opts.DriverURL, err)
	}
	return ctl.NewClient(ctx, nc, e.opts.Auth, opts)
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

// ConfKeys are the only settings an executor reads from the driver's
// Registered message: the driver sends these and nothing else, so no
// credential or secret-looking value of the application's configuration
// travels to executors. The object store's are where it is and how to
// address it, never its credentials, which executors take from their own
// environment.
var ConfKeys = append([]string{
	config.NetworkTimeout.Key(), config.ExecutorHeartbeatInterval.Key(), config.TaskMaxDirectResultSize.Key(),
	config.ShuffleMaxPeerConnections.Key(),
}, settings.ObjectStoreExecutorKeys...)

// applyConf adopts the driver's timeouts and object-store settings, as
// Spark executors adopt the driver's configuration when they register.
// Only ConfKeys are taken: with a shared secret the driver does not prove
// itself, and a peer posing as one must not hand an executor object-store
// credentials (settings.ObjectStore reads them too) or any other setting.
func (e *Executor) applyConf(kv map[string]string) {
	c := config.New()
	for _, k := range ConfKeys {
		if v, ok := kv[k]; ok {
			c.Set(k, v)
		}
	}
	e.networkTimeout = config.NetworkTimeout.Get(c)
	e.heartbeatInterval = config.ExecutorHeartbeatInterval.Get(c)
	e.maxDirectResult = config.TaskMaxDirectResultSize.Get(c)
	if e.shuffles != nil {
		e.shuffles.SetPeerLimits(config.ShuffleMaxPeerConnections.Get(c), e.networkTimeout)
	}
	cfg := settings.ObjectStore(c)
	e.store.Store(objstore.New(cfg))
	if e.opts.StoreReady != nil {
		e.opts.StoreReady(cfg)
	}
}

func (e *Executor) receive(stream *ctl.ClientStream) error {
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
			for _, p := range m.Launch.GetPlans() {
				e.plans[p.GetTaskSet()] = p
			}
			for _, t := range m.Launch.GetTasks() {
				e.launch(t, e.plans[t.GetTaskSet()])
			}
		case *pb.DriverMessage_ForgetPlans:
			for _, id := range m.ForgetPlans.GetTaskSets() {
				delete(e.plans, id)
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

func (e *Executor) send(stream *ctl.ClientStream, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		case <-e.out.notify:
		}
		// Let the tasks that are about to finish report in this batch: a
		// write is a system call, and one per status costs more than the
		// short tasks themselves.
		runtime.Gosched()
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
// (less often while none run, see heartbeatDue) and ends the executor when
// nothing has come from the driver for spark.network.timeout.
func (e *Executor) heartbeat(stop <-chan struct{}) error {
	// Now before the ticker: a test that steps the clock once it sees the
	// ticker waiting must not move the first heartbeat's reference.
	last := e.opts.Clock.Now()
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
		running := e.runningIDs()
		if !heartbeatDue(last, now, len(running) > 0, e.heartbeatInterval, e.networkTimeout) {
			continue
		}
		last = now
		e.out.add(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Heartbeat{Heartbeat: &pb.Heartbeat{
			UnixNano:       now.UnixNano(),
			RunningTaskIds: running,
		}}})
	}
}

// heartbeatDue decides whether a heartbeat goes out at now, the last having
// gone at last. While tasks run, every spark.executor.heartbeatInterval, as
// in Spark. While none run, a heartbeat carries only "still here", which the
// driver needs once per spark.network.timeout (after which it removes the
// executor): then once a quarter of that has passed, as the driver answers
// heartbeats. Thousands of executors that registered and wait for work
// would otherwise cost the driver a wake-up, a read and a decryption each
// every 10 s (0.8 of its 12 CPU-seconds while 5,000 executors start).
func heartbeatDue(last, now time.Time, busy bool, interval, networkTimeout time.Duration) bool {
	if busy {
		return true
	}
	return now.Sub(last) >= max(interval, networkTimeout/4)
}

// driverUnreachable decides whether the executor should give up on its driver.
func driverUnreachable(lastContact, now time.Time, timeout time.Duration) bool {
	return now.Sub(lastContact) > timeout
}

// retryWait is how long to wait before the next registration attempt, and
// the back-off after it: backoff doubling up to maxBackoff, spread over
// [backoff/2, 3·backoff/2) when the executor lost its driver (again).
func retryWait(backoff, maxBackoff time.Duration, again bool) (wait, next time.Duration) {
	wait = backoff
	if again {
		wait = backoff/2 + rand.N(backoff)
	}
	return wait, min(2*backoff, maxBackoff)
}
