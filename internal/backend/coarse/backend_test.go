package coarse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/scheduler"
)

const appID = "drover-test"

var quiet = slog.New(slog.DiscardHandler)

var (
	blocker   atomic.Pointer[chan struct{}] // coarse.block tasks wait for it to close
	blocked   atomic.Int32                  // coarse.block tasks started
	bigResult = 3 << 20
)

func init() {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(funcs.Register("coarse.echo", func(_ context.Context, t funcs.Task, p []byte) ([]byte, error) {
		return fmt.Appendf(nil, "%d:%s", t.Partition, p), nil
	}))
	must(funcs.Register("coarse.big", func(context.Context, funcs.Task, []byte) ([]byte, error) {
		b := make([]byte, bigResult)
		for i := range b {
			b[i] = byte(i)
		}
		return b, nil
	}))
	must(funcs.Register("coarse.block", func(ctx context.Context, _ funcs.Task, _ []byte) ([]byte, error) {
		blocked.Add(1)
		select {
		case <-*blocker.Load():
		case <-ctx.Done():
		}
		return []byte("done"), nil
	}))
}

type harness struct {
	sched *scheduler.Scheduler
	b     *Backend
}

func startBackend(t testing.TB, opts Options) *harness {
	t.Helper()
	opts.AppID = appID
	opts.Logger = quiet
	s, b := newOn(scheduler.Options{MaxFailures: 4}, nil, opts)
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	return &harness{sched: s, b: b}
}

// startExecutor runs an in-process executor against the backend.
// The returned channel yields the executor's exit error once.
func startExecutor(t *testing.T, h *harness, id executorid.ID, cores int, auth rpc.Auth) (cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		ch <- executor.Run(ctx, executor.Options{
			DriverURL: h.b.URL(), AppID: appID, ExecutorID: id, Cores: cores, Auth: auth,
			NetworkTimeout: 5 * time.Second, Logger: quiet,
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("executor %s did not stop", id)
		}
	})
	return cancel, ch
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// The executors talk to the backend over real TCP sockets: poll.
	if utilwait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }) != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func run(t *testing.T, h *harness, fn string, n int) ([]string, error) {
	t.Helper()
	tasks := make([]scheduler.TaskSpec, n)
	for i := range tasks {
		tasks[i] = scheduler.TaskSpec{Partition: i, Payload: []byte("x")}
	}
	out := make([]string, n)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := h.sched.Run(ctx, scheduler.TaskSetSpec{JobID: 1, StageID: 1, Func: fn, Tasks: tasks, OnSuccess: func(p int, r []byte) {
		if len(r) > 64 {
			out[p] = fmt.Sprintf("%d bytes", len(r))
			return
		}
		out[p] = string(r)
	}})
	return out, err
}

func TestTasksRunOnRegisteredExecutors(t *testing.T) {
	h := startBackend(t, Options{InitialExecutors: 2, MinRegisteredRatio: 1, MaxRegisteredWait: time.Minute})
	startExecutor(t, h, 1, 2, rpc.Auth{})
	startExecutor(t, h, 2, 1, rpc.Auth{})
	if err := h.b.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := h.b.DefaultParallelism(); got != 3 {
		t.Errorf("DefaultParallelism = %d, want the 3 registered cores", got)
	}
	out, err := run(t, h, "coarse.echo", 50)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range out {
		if want := fmt.Sprintf("%d:x", i); s != want {
			t.Fatalf("partition %d = %q, want %q", i, s, want)
		}
	}
	// Every core is free again.
	for _, ex := range h.b.Executors() {
		if ex.FreeCores != ex.TotalCores {
			t.Errorf("executor %s: %d of %d cores free after the job", ex.ID, ex.FreeCores, ex.TotalCores)
		}
	}
}

func TestLargeResultsAreFetchedFromTheExecutor(t *testing.T) {
	h := startBackend(t, Options{})
	startExecutor(t, h, 1, 1, rpc.Auth{})
	out, err := run(t, h, "coarse.big", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d bytes", bigResult)
	if diff := cmp.Diff([]string{want, want}, out); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

func TestAuthentication(t *testing.T) {
	good := rpc.Auth{AppID: appID, Secret: "s3cret"}
	tests := map[string]struct {
		id     string
		client rpc.Auth
		want   codes.Code
	}{
		"right secret": {id: "11", client: good, want: codes.OK},
		"no secret":    {id: "12", client: rpc.Auth{}, want: codes.Unauthenticated},
		"wrong secret": {id: "13", client: rpc.Auth{AppID: appID, Secret: "guess"}, want: codes.Unauthenticated},
	}
	h := startBackend(t, Options{Auth: good})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := rawRegister(t, h.b.URL(), tc.client, tc.id)
			if got := status.Code(err); got != tc.want {
				t.Fatalf("registration: code %v (%v), want %v", got, err, tc.want)
			}
		})
	}
	t.Run("executor with the secret runs tasks; without it, it gives up", func(t *testing.T) {
		startExecutor(t, h, 21, 1, good)
		if _, err := run(t, h, "coarse.echo", 3); err != nil {
			t.Fatal(err)
		}
		_, done := startExecutor(t, h, 22, 1, rpc.Auth{AppID: appID, Secret: "nope"})
		select {
		case err := <-done:
			if status.Code(errors.Unwrap(err)) != codes.Unauthenticated && !strings.Contains(err.Error(), "Unauthenticated") {
				t.Fatalf("executor with the wrong secret: %v, want Unauthenticated", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("executor with the wrong secret kept trying")
		}
	})
}

// rawRegister opens a control stream and registers like an executor would,
// so a test controls every message.
func rawRegister(t testing.TB, url string, auth rpc.Auth, id string) (*ctl.ClientStream, error) {
	t.Helper()
	stream, err := ctl.Dial(t.Context(), url, auth, ctl.Options{})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = stream.Close() })
	if err := stream.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: &pb.Register{
		AppId: appID, ExecutorId: id, Address: "127.0.0.1:1", Cores: 1,
	}}}); err != nil {
		return nil, err
	}
	msg, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if msg.GetRegistered() == nil {
		return nil, fmt.Errorf("unexpected reply %v", msg)
	}
	return stream, nil
}

func TestRegistrationRules(t *testing.T) {
	h := startBackend(t, Options{})
	if _, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "1"); status.Code(err) != codes.AlreadyExists {
		t.Errorf("duplicate id: %v, want AlreadyExists", err)
	}
	h.b.RemoveExecutor(1, scheduler.LossReason{Message: "killed by the driver"})
	if _, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "1"); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("removed executor registering again: %v, want FailedPrecondition", err)
	}
	h.b.ExcludeExecutor(7)
	if _, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "7"); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("excluded executor: %v, want FailedPrecondition", err)
	}
	if _, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "exec-8"); status.Code(err) != codes.InvalidArgument {
		t.Errorf("an id that is not a number: %v, want InvalidArgument", err)
	}
}

func TestHeartbeatExpiryWithFakeClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	h := startBackend(t, Options{Clock: clk, NetworkTimeout: 120 * time.Second, TimeoutInterval: 60 * time.Second})
	stream, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "2"); err != nil {
		t.Fatal(err)
	}
	// A task runs on executor 1 or 2; whichever dies, it is resubmitted.
	ts := h.sched.Submit(scheduler.TaskSetSpec{JobID: 1, StageID: 1, Func: "coarse.echo", Tasks: []scheduler.TaskSpec{{Partition: 0}}})

	clk.Step(100 * time.Second)
	// Executor 1 heartbeats; executor 2 stays silent.
	if err := stream.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Heartbeat{Heartbeat: &pb.Heartbeat{}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "heartbeat ack", func() bool {
		msg, err := stream.Recv()
		return err == nil && msg.GetHeartbeatAck() != nil
	})
	clk.Step(30 * time.Second) // executor 2: 130 s silent; executor 1: 30 s
	h.b.ExpireDeadExecutors()
	var ids []executorid.ID
	for _, ex := range h.b.Executors() {
		ids = append(ids, ex.ID)
	}
	if diff := cmp.Diff([]executorid.ID{1}, ids); diff != "" {
		t.Errorf("executors after expiry (-want +got):\n%s", diff)
	}
	// The ticker drives the same check: step past executor 1's timeout.
	clk.Step(121 * time.Second)
	waitFor(t, "expiry by the ticker", func() bool { return len(h.b.Executors()) == 0 })
	h.sched.Cancel(ts, errors.New("test over"))
}

func TestExpired(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := map[string]struct {
		last map[executorid.ID]time.Time
		want []executorid.ID
	}{
		"none":            {last: map[executorid.ID]time.Time{1: now}},
		"exactly timeout": {last: map[executorid.ID]time.Time{1: now.Add(-120 * time.Second)}},
		"past timeout":    {last: map[executorid.ID]time.Time{2: now.Add(-121 * time.Second), 1: now.Add(-500 * time.Second), 3: now}, want: []executorid.ID{1, 2}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Expired(tc.last, now, 120*time.Second)); diff != "" {
				t.Errorf("Expired (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSufficientResources(t *testing.T) {
	tests := map[string]struct {
		registered, initial int
		ratio               float64
		want                bool
	}{
		"k8s default 0.8 of 5, 4 registered": {4, 5, 0.8, true},
		"k8s default 0.8 of 5, 3 registered": {3, 5, 0.8, false},
		"ratio 0":                            {0, 5, 0, true},
		"ratio 1 all registered":             {2, 2, 1, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := sufficient(tc.registered, tc.initial, tc.ratio); got != tc.want {
				t.Errorf("sufficient = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWaitReadyGivesUpAfterMaxWait(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	h := startBackend(t, Options{Clock: clk, InitialExecutors: 3, MinRegisteredRatio: 1, MaxRegisteredWait: 30 * time.Second})
	done := make(chan error, 1)
	go func() { done <- h.b.WaitReady(t.Context()) }()
	waitFor(t, "WaitReady to wait on the clock", func() bool { return clk.HasWaiters() })
	select {
	case <-done:
		t.Fatal("WaitReady returned before the wait time")
	default:
	}
	// Other loops of the backend wait on the clock too, so WaitReady's
	// timer may not be set yet: step until it has fired.
	clk.Step(30 * time.Second)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-time.After(10 * time.Millisecond):
			clk.Step(30 * time.Second)
		case <-deadline:
			t.Fatal("WaitReady did not return after spark.scheduler.maxRegisteredResourcesWaitingTime")
		}
	}
}

// A quota caps the executors at 0: WaitReady does not wait the full
// maxRegisteredResourcesWaitingTime for registrations that cannot come.
func TestWaitReadyStopsWaitingForWhatCannotBeCreated(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	h := startBackend(t, Options{Clock: clk, InitialExecutors: 3, MinRegisteredRatio: 1, MaxRegisteredWait: 30 * time.Second})
	done := make(chan error, 1)
	go func() { done <- h.b.WaitReady(t.Context()) }()
	waitFor(t, "WaitReady to wait on the clock", func() bool { return clk.HasWaiters() })
	h.b.LimitExecutors(1)
	select {
	case <-done:
		t.Fatal("WaitReady returned before the one executor the quota allows registered")
	case <-time.After(50 * time.Millisecond):
	}
	startExecutor(t, h, 1, 1, rpc.Auth{})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitReady still waits for executors the quota holds back")
	}
}

func TestDecommissionFinishesRunningTasks(t *testing.T) {
	h := startBackend(t, Options{})
	cancel, done := startExecutor(t, h, 1, 2, rpc.Auth{})
	waitFor(t, "registration", func() bool { return len(h.b.Executors()) == 1 })
	var finished atomic.Int32
	release := make(chan struct{})
	blocker.Store(&release)
	blocked.Store(0)
	tasks := []scheduler.TaskSpec{{Partition: 0}, {Partition: 1}}
	ts := h.sched.Submit(scheduler.TaskSetSpec{JobID: 1, StageID: 1, Func: "coarse.block", Tasks: tasks, OnSuccess: func(int, []byte) { finished.Add(1) }})
	waitFor(t, "both tasks running on the executor", func() bool { return blocked.Load() == 2 })
	cancel() // SIGTERM
	waitFor(t, "decommission noticed", func() bool {
		h.b.mu.Lock()
		defer h.b.mu.Unlock()
		ex := h.b.executors[1]
		return ex != nil && ex.decommissioning
	})
	close(release)
	if err := ts.Err(); err != nil {
		t.Fatalf("task set: %v", err)
	}
	if finished.Load() != 2 {
		t.Errorf("finished %d tasks, want 2", finished.Load())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("executor exited with %v, want a clean exit", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("decommissioned executor did not exit")
	}
	waitFor(t, "executor removed", func() bool { return len(h.b.Executors()) == 0 })
}

// TestMain fails the package when a goroutine a backend started outlives
// its Stop. Started with connChildEnv, the test binary is the executors'
// process of BenchmarkDriverPerExecutor instead.
func TestMain(m *testing.M) {
	if raw := os.Getenv(connChildEnv); raw != "" {
		if err := connChildMain(raw); err != nil {
			fmt.Fprintln(os.Stderr, "executors:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// recordingCluster is a cluster manager that answers ExitReason when told
// and records ExecutorLost.
type recordingCluster struct {
	mu     sync.Mutex
	lost   []executorid.ID
	reason chan scheduler.LossReason
}

func (c *recordingCluster) ExitReason(ctx context.Context, _ executorid.ID) (scheduler.LossReason, bool) {
	select {
	case r := <-c.reason:
		return r, true
	case <-ctx.Done():
		return scheduler.LossReason{}, false
	}
}

func (c *recordingCluster) ExecutorLost(id executorid.ID, _ scheduler.LossReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lost = append(c.lost, id)
}

// executor returns a registered executor's record.
func (h *harness) executor(id executorid.ID) *executorData {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	return h.b.executors[id]
}

func (c *recordingCluster) lostIDs() []executorid.ID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lost)
}

// Removal flows one way: what the cluster manager removes is never
// reported back to it; what the backend finds gone by itself is, once.
func TestRemovalFlowsOneWay(t *testing.T) {
	cl := &recordingCluster{reason: make(chan scheduler.LossReason)}
	s, b := newOn(scheduler.Options{MaxFailures: 4}, cl, Options{AppID: appID, Logger: quiet})
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	h := &harness{sched: s, b: b}

	// 1: the cluster manager removes a registered executor.
	startExecutor(t, h, 1, 1, rpc.Auth{})
	waitFor(t, "registration of 1", func() bool { return len(b.Executors()) == 1 })
	b.RemoveExecutor(1, scheduler.LossReason{Message: "pod ended"})

	// 2: an executor's connection ends; while the backend waits for the
	// exit reason, the cluster manager removes it (it saw the pod end),
	// then answers. (Cancelling an in-process executor decommissions it, so
	// the abrupt end of a connection is driven through disconnected.)
	startExecutor(t, h, 2, 1, rpc.Auth{})
	waitFor(t, "registration of 2", func() bool { return slices.Contains(b.ExecutorIDs(), 2) })
	b.disconnected(h.executor(2), io.ErrUnexpectedEOF)
	b.RemoveExecutor(2, scheduler.LossReason{Message: "pod failed"})
	cl.reason <- scheduler.LossReason{Message: "pod failed"}

	// 3: an executor's connection ends and the backend drops it itself,
	// so it tells the cluster manager.
	startExecutor(t, h, 3, 1, rpc.Auth{})
	waitFor(t, "registration of 3", func() bool { return slices.Contains(b.ExecutorIDs(), 3) })
	b.disconnected(h.executor(3), io.ErrUnexpectedEOF)
	cl.reason <- scheduler.LossReason{Message: "exited"}
	waitFor(t, "executor 3 dropped", func() bool { return len(b.Executors()) == 0 })
	// The backend tells the cluster manager after it drops the executor;
	// then a short wait gives a wrong report of 1 or 2 the time to come.
	// Real time: the executors' connections are real TCP sockets, which a
	// synctest bubble cannot hold.
	waitFor(t, "executor 3 reported lost", func() bool { return len(cl.lostIDs()) > 0 })
	time.Sleep(50 * time.Millisecond)
	if diff := cmp.Diff([]executorid.ID{3}, cl.lostIDs()); diff != "" {
		t.Errorf("executors reported lost to the cluster manager (-want +got):\n%s", diff)
	}
}

// TestBadDeclaredResultSize: an executor that declares a negative result
// size fails its task; the driver neither panics nor allocates from it.
func TestBadDeclaredResultSize(t *testing.T) {
	s, b := newOn(scheduler.Options{MaxFailures: 1}, nil, Options{AppID: appID, Logger: quiet})
	ts := s.Submit(scheduler.TaskSetSpec{JobID: 1, StageID: 1, Func: "f", Tasks: []scheduler.TaskSpec{{Partition: 0}}})
	ds := s.ResourceOffers([]scheduler.Offer{{ExecutorID: 1, Cores: 1}})
	if len(ds) != 1 {
		t.Fatalf("%d tasks launched, want 1", len(ds))
	}
	b.fetchResult(t.Context(), &executorData{ExecutorInfo: ExecutorInfo{ID: 1}}, scheduler.Status{TaskID: ds[0].TaskID, ExecutorID: 1, State: scheduler.Finished}, -1)
	if err := ts.Err(); err == nil || !strings.Contains(err.Error(), "declared a result of -1 bytes") {
		t.Errorf("task set error %v, want the declared size named", err)
	}
}

// A known executor's heartbeats are answered once a quarter of
// spark.network.timeout has passed since the last answer, enough for it
// to know its driver lives; an unknown one's always, to re-register.
func TestHeartbeatsAnsweredEachQuarterOfTheTimeout(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	h := startBackend(t, Options{Clock: clk, NetworkTimeout: 120 * time.Second, TimeoutInterval: time.Hour})
	hb := &pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Heartbeat{Heartbeat: &pb.Heartbeat{}}}
	send := func(s *ctl.ClientStream, n int) {
		for range n {
			if err := s.Send(hb); err != nil {
				t.Fatal(err)
			}
		}
	}
	// answers reads the stream to its end: the handler ends once it has
	// read everything after CloseSend, and the driver closes the stream
	// after sending what was queued.
	answers := func(s *ctl.ClientStream) []bool {
		if err := s.CloseSend(); err != nil {
			t.Fatal(err)
		}
		var got []bool
		for {
			msg, err := s.Recv()
			if err != nil {
				return got
			}
			if a := msg.GetHeartbeatAck(); a != nil {
				got = append(got, a.GetReregister())
			}
		}
	}

	known, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "1")
	if err != nil {
		t.Fatal(err)
	}
	// Heartbeats as it registered go unanswered; of those handled 30 s
	// later (the fake clock is read as each is handled), the first alone.
	send(known, 3)
	clk.Step(30 * time.Second)
	send(known, 3)
	if diff := cmp.Diff([]bool{false}, answers(known)); diff != "" {
		t.Errorf("answers to a known executor's heartbeats, by Reregister (-want +got):\n%s", diff)
	}

	forgotten, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "2")
	if err != nil {
		t.Fatal(err)
	}
	h.b.mu.Lock()
	delete(h.b.executors, 2) // as after its expiry
	h.b.mu.Unlock()
	send(forgotten, 2)
	if diff := cmp.Diff([]bool{true, true}, answers(forgotten)); diff != "" {
		t.Errorf("answers to a forgotten executor's heartbeats, by Reregister (-want +got):\n%s", diff)
	}
}

func TestAckDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		since time.Duration
		want  bool
	}{{0, false}, {10 * time.Second, false}, {29 * time.Second, false}, {30 * time.Second, true}, {5 * time.Minute, true}} {
		if got := ackDue(t0, t0.Add(tc.since), 120*time.Second); got != tc.want {
			t.Errorf("ackDue %s after the last answer, timeout 120s: %v, want %v", tc.since, got, tc.want)
		}
	}
}

// TestReportsNeverFreeMoreCoresThanAnExecutorHas: only the ends of tasks
// launched on an executor free its cores. A busy executor that reports
// tasks it was not running as finished (a bug, a duplicate, another
// executor's task) gains no free core, so offers do not pile tasks onto it;
// before, each report freed a task's cores without bound.
func TestReportsNeverFreeMoreCoresThanAnExecutorHas(t *testing.T) {
	h := startBackend(t, Options{})
	if _, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "1"); err != nil {
		t.Fatal(err)
	}
	ex := h.executor(1)
	free := func() int {
		h.b.mu.Lock()
		defer h.b.mu.Unlock()
		return ex.FreeCores
	}
	h.b.mu.Lock()
	ex.FreeCores, ex.running = 0, map[int64]int{7: 1} // busy with task 7
	h.b.mu.Unlock()
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = int64(1000 + i)
	}
	h.b.statusUpdate(ex, &pb.StatusBatch{FinishedTaskIds: ids, FinishedNanos: make([]int64, len(ids))})
	if got := free(); got != 0 {
		t.Errorf("free cores %d after 1,000 reports of tasks it was not running; want 0 (still busy)", got)
	}
	h.b.statusUpdate(ex, &pb.StatusBatch{FinishedTaskIds: []int64{7}, FinishedNanos: []int64{1}})
	h.b.statusUpdate(ex, &pb.StatusBatch{FinishedTaskIds: []int64{7}, FinishedNanos: []int64{1}}) // a duplicate
	if got := free(); got != 1 {
		t.Errorf("free cores %d after its task ended (reported twice); want 1", got)
	}
}

// newOn builds a scheduler that launches on a backend with cm and opts.
func newOn(so scheduler.Options, cm ClusterManager, opts Options) (*scheduler.Scheduler, *Backend) {
	var b *Backend
	s, err := scheduler.New(so, func(s *scheduler.Scheduler) (scheduler.Backend, error) {
		b = New(s, cm, opts)
		return b, nil
	})
	if err != nil {
		panic(err)
	}
	return s, b
}
