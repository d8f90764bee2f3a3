package executor

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
)

func init() {
	if err := funcs.Register("executor.panics", func(context.Context, funcs.Task, []byte) ([]byte, error) {
		var xs []int
		return []byte{byte(xs[3])}, nil // index out of range
	}); err != nil {
		panic(err)
	}
}

func TestRunTaskRecoversPanics(t *testing.T) {
	o := RunTask(context.Background(), funcs.Task{}, "executor.panics", nil)
	if !o.Panicked || o.Err == nil || !strings.Contains(o.Err.Error(), "index out of range") {
		t.Fatalf("outcome = %+v, want a recovered panic with its message", o)
	}
	if !strings.Contains(o.Stack, "executor_test.go") {
		t.Errorf("stack does not point at the panicking function:\n%s", o.Stack)
	}
}

func TestRunTaskUnknownFunction(t *testing.T) {
	o := RunTask(context.Background(), funcs.Task{}, "no.such.func", nil)
	if o.Err == nil || !strings.Contains(o.Err.Error(), `"no.such.func" is not registered`) {
		t.Fatalf("outcome = %+v", o)
	}
}

// silentDriver accepts registration and then never says anything again.
type silentDriver struct {
	conf       map[string]string
	heartbeats chan struct{}
}

func (d *silentDriver) Control(stream *ctl.ServerStream) error {
	if _, err := stream.Recv(); err != nil {
		return err
	}
	if err := stream.Send(&pb.DriverMessage{Msg: &pb.DriverMessage_Registered{Registered: &pb.Registered{Conf: d.conf}}}); err != nil {
		return err
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			return nil
		}
		if msg.GetHeartbeat() != nil {
			select {
			case d.heartbeats <- struct{}{}:
			default:
			}
		}
	}
}

func serve(t *testing.T, handler ctl.Handler, auth rpc.Auth) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := ctl.NewServer(auth, ctl.Options{}, slog.New(slog.DiscardHandler), handler)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// runWithSilentDriver runs an executor on a fake clock with a silentDriver
// that sends it conf, and returns once the executor's heartbeat ticker
// waits on the clock.
func runWithSilentDriver(t *testing.T, conf map[string]string) (*clocktesting.FakeClock, *silentDriver, <-chan error) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	d := &silentDriver{conf: conf, heartbeats: make(chan struct{}, 1)}
	url := serve(t, d.Control, rpc.Auth{})
	done := make(chan error, 1)
	go func() {
		done <- Run(t.Context(), Options{DriverURL: url, AppID: "a", ExecutorID: 1, Clock: clk})
	}()
	// The executor talks to the driver over a real TCP socket, which a
	// synctest bubble cannot hold: poll.
	if wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return clk.HasWaiters(), nil }) != nil {
		t.Fatal("timed out waiting for the heartbeat ticker")
	}
	return clk, d, done
}

func TestExecutorExitsWhenDriverIsSilentForNetworkTimeout(t *testing.T) {
	clk, d, done := runWithSilentDriver(t, map[string]string{"spark.network.timeout": "30s", "spark.executor.heartbeatInterval": "10s"})
	for elapsed := 10 * time.Second; elapsed <= 60*time.Second; elapsed += 10 * time.Second {
		clk.Step(10 * time.Second)
		select {
		case <-d.heartbeats:
			if elapsed > 30*time.Second {
				t.Fatalf("executor still heartbeating after %s of driver silence (spark.network.timeout is 30s)", elapsed)
			}
		case err := <-done:
			if elapsed <= 30*time.Second {
				t.Fatalf("executor exited after %s of silence, before spark.network.timeout (30s): %v", elapsed, err)
			}
			if !errors.Is(err, ErrDriverLost) || !strings.Contains(err.Error(), "spark.network.timeout") {
				t.Fatalf("exit error = %v, want ErrDriverLost naming spark.network.timeout", err)
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatalf("neither a heartbeat nor an exit after %s", elapsed)
		}
	}
	t.Fatal("executor still running after 60s of driver silence")
}

func TestHeartbeatDue(t *testing.T) {
	base := time.Unix(1000, 0)
	tests := map[string]struct {
		since    time.Duration
		busy     bool
		interval time.Duration
		timeout  time.Duration
		want     bool
	}{
		"busy: every interval":                  {10 * time.Second, true, 10 * time.Second, 120 * time.Second, true},
		"idle: not at the interval":             {10 * time.Second, false, 10 * time.Second, 120 * time.Second, false},
		"idle: not before a quarter of timeout": {29 * time.Second, false, 10 * time.Second, 120 * time.Second, false},
		"idle: at a quarter of the timeout":     {30 * time.Second, false, 10 * time.Second, 120 * time.Second, true},
		"idle: the interval when it is longer":  {10 * time.Second, false, 10 * time.Second, 30 * time.Second, true},
		"idle: not before a longer interval":    {9 * time.Second, false, 10 * time.Second, 30 * time.Second, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := heartbeatDue(base, base.Add(tc.since), tc.busy, tc.interval, tc.timeout); got != tc.want {
				t.Errorf("heartbeatDue(%s after the last, busy %v, interval %s, timeout %s) = %v, want %v",
					tc.since, tc.busy, tc.interval, tc.timeout, got, tc.want)
			}
		})
	}
}

// An idle executor heartbeats once a quarter of spark.network.timeout, not
// every spark.executor.heartbeatInterval.
func TestIdleExecutorHeartbeatsEachQuarterOfNetworkTimeout(t *testing.T) {
	clk, d, _ := runWithSilentDriver(t, map[string]string{"spark.network.timeout": "120s", "spark.executor.heartbeatInterval": "10s"})
	want := []time.Duration{30 * time.Second, 60 * time.Second, 90 * time.Second}
	var got []time.Duration
	for elapsed := 10 * time.Second; elapsed <= 90*time.Second; elapsed += 10 * time.Second {
		clk.Step(10 * time.Second)
		// A heartbeat that is due gets time to cross a loaded machine; one
		// that is not due would come at once, and is looked for briefly.
		wait := 500 * time.Millisecond
		if slices.Contains(want, elapsed) {
			wait = 10 * time.Second
		}
		select {
		case <-d.heartbeats:
			got = append(got, elapsed)
		case <-time.After(wait):
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("idle executor's heartbeats, after how long (-want +got):\n%s", diff)
	}
}

func TestDriverUnreachable(t *testing.T) {
	base := time.Unix(1000, 0)
	tests := map[string]struct {
		since time.Duration
		want  bool
	}{
		"just heard":     {0, false},
		"at the timeout": {120 * time.Second, false},
		"past it":        {121 * time.Second, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := driverUnreachable(base, base.Add(tc.since), 120*time.Second); got != tc.want {
				t.Errorf("driverUnreachable after %s = %v, want %v", tc.since, got, tc.want)
			}
		})
	}
}

func TestResultServerRequiresTheSecret(t *testing.T) {
	auth := rpc.Auth{AppID: "a", Secret: "s"}
	e, err := newExecutor(Options{DriverURL: "x", ExecutorID: 1, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	e.results[7] = []byte("result")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(rpc.ServerOptions(auth)...)
	pb.RegisterExecutorServer(s, e)
	go func() { _ = s.Serve(lis) }()
	defer s.Stop()
	fetch := func(a rpc.Auth) (string, error) {
		conn, err := grpc.NewClient(lis.Addr().String(), rpc.DialOptions(a)...)
		if err != nil {
			return "", err
		}
		defer conn.Close()
		stream, err := pb.NewExecutorClient(conn).FetchResult(t.Context(), &pb.FetchResultRequest{TaskId: 7})
		if err != nil {
			return "", err
		}
		c, err := stream.Recv()
		if err != nil {
			return "", err
		}
		return string(c.GetData()), nil
	}
	if _, err := fetch(rpc.Auth{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("fetch without the secret: %v, want Unauthenticated", err)
	}
	if _, err := fetch(rpc.Auth{AppID: "a", Secret: "wrong"}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("fetch with a wrong secret: %v, want Unauthenticated", err)
	}
	got, err := fetch(auth)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("result", got); diff != "" {
		t.Errorf("fetched (-want +got):\n%s", diff)
	}
}

func TestOptionsFromEnv(t *testing.T) {
	good := Options{DriverURL: "10.0.0.1:7078", AppID: "app", ExecutorID: 3, BindHost: "10.0.0.9", Cores: 2, MemoryBytes: 512 << 20,
		Auth: rpc.Auth{AppID: "app", Secret: "k"}, PodName: "p-exec-3", Reconnect: true}
	env := map[string]string{}
	for _, kv := range good.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	got, err := OptionsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(good, got, cmp.Comparer(func(a, b Options) bool {
		return a.DriverURL == b.DriverURL && a.AppID == b.AppID && a.ExecutorID == b.ExecutorID && a.BindHost == b.BindHost &&
			a.Cores == b.Cores && a.MemoryBytes == b.MemoryBytes && a.Auth == b.Auth && a.PodName == b.PodName &&
			a.Reconnect == b.Reconnect
	})); diff != "" {
		t.Errorf("options round trip (-want +got):\n%s", diff)
	}
	// On a process node, the pod's copy of its local-dir volume, not the
	// mount path.
	env[envvar.LocalDirs] = "/var/data/drover,/var/data/other"
	if got, _ := OptionsFromEnv(func(k string) string { return env[k] }); got.LocalDir != "/var/data/drover" {
		t.Errorf("local dir %q, want the first of SPARK_LOCAL_DIRS", got.LocalDir)
	}
	env[envvar.LocalDirVolume] = "/nodes/pods/p-exec-3/volumes/spark-local-dir-1"
	if got, _ := OptionsFromEnv(func(k string) string { return env[k] }); got.LocalDir != env[envvar.LocalDirVolume] {
		t.Errorf("local dir on a process node %q, want %s", got.LocalDir, env[envvar.LocalDirVolume])
	}
	delete(env, envvar.DriverURL)
	if _, err := OptionsFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), envvar.DriverURL) {
		t.Errorf("missing driver URL: %v", err)
	}
	env[envvar.DriverURL] = "x"
	env[envvar.Reconnect] = "sometimes"
	if _, err := OptionsFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), envvar.Reconnect) {
		t.Errorf("bad reconnect flag: %v", err)
	}
	env[envvar.Reconnect] = "false"
	env[envvar.Cores] = "two"
	if _, err := OptionsFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), envvar.Cores) {
		t.Errorf("bad cores: %v", err)
	}
}

// statusSize, which batches statuses without encoding them, never
// underestimates a status's encoded size.
func TestStatusSizeBoundsTheEncoding(t *testing.T) {
	big := strings.Repeat("x", 10_000)
	for name, s := range map[string]*pb.TaskStatus{
		"empty":    {},
		"finished": {TaskId: 1 << 62, State: pb.TaskState_TASK_STATE_FINISHED, DurationNanos: 1 << 62, Result: []byte(big)},
		"indirect": {TaskId: 1 << 62, State: pb.TaskState_TASK_STATE_FINISHED, Indirect: true, ResultSize: 1 << 62},
		"failed": {TaskId: -1, State: pb.TaskState_TASK_STATE_FAILED, Error: big, Stack: big, Panicked: true,
			FetchFailure: &pb.FetchFailure{ShuffleId: -1, MapId: -1, ExecutorId: big, Address: big, Message: big}},
		"metrics": {TaskId: -1, Metrics: &pb.TaskMetrics{InputBytes: -1, InputRecords: -1, OutputBytes: -1, OutputRecords: -1,
			ShuffleReadBytes: -1, ShuffleReadRecords: -1, ShuffleWriteBytes: -1, ShuffleWriteRecords: -1, SpillBytes: -1}},
		"metrics and store retries": {TaskId: -1, State: pb.TaskState_TASK_STATE_FINISHED, DurationNanos: -1, Indirect: true, ResultSize: -1,
			Metrics: &pb.TaskMetrics{InputBytes: -1, InputRecords: -1, OutputBytes: -1, OutputRecords: -1,
				ShuffleReadBytes: -1, ShuffleReadRecords: -1, ShuffleWriteBytes: -1, ShuffleWriteRecords: -1, SpillBytes: -1,
				StoreRetries: map[string]int64{"throttled": -1, "server": -1, "connection": -1}}},
	} {
		if got, want := statusSize(s), proto.Size(s); got < want {
			t.Errorf("%s: statusSize = %d, under the encoded %d bytes", name, got, want)
		}
	}
}
