package local

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/scheduler"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/util/wait"
)

const testApp = "drover-local-test"

func init() {
	reg := func(name string, f funcs.Func) {
		if err := funcs.Register(name, f); err != nil {
			panic(err)
		}
	}
	reg("local.noop", func(context.Context, funcs.Task, []byte) ([]byte, error) { return nil, nil })
	// local.pid sleeps for the payload's milliseconds and returns its pid.
	reg("local.pid", func(ctx context.Context, _ funcs.Task, p []byte) ([]byte, error) {
		return sleepThenPid(ctx, string(p))
	})
	// local.started is local.pid that first marks, with a file named for
	// its process in the directory after the milliseconds, that it started.
	reg("local.started", func(ctx context.Context, _ funcs.Task, p []byte) ([]byte, error) {
		ms, dir, _ := strings.Cut(string(p), " ")
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), nil, 0o600); err != nil {
			return nil, err
		}
		return sleepThenPid(ctx, ms)
	})
	reg("local.exit3", func(context.Context, funcs.Task, []byte) ([]byte, error) {
		os.Exit(3)
		return nil, nil
	})
	reg("local.panic", func(_ context.Context, t funcs.Task, _ []byte) ([]byte, error) {
		if t.Partition == 1 {
			panic(fmt.Sprintf("bad record %d", t.Partition))
		}
		return nil, nil
	})
}

// TestMain lets the test binary be an executor process (started by the
// cluster under test) or a driver process (for the orphan test).
func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envvar.Role) == envvar.RoleExecutor:
		opts, err := executor.OptionsFromEnv(os.Getenv)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		stopProfile := profileExecutor()
		err = executor.Run(ctx, opts)
		stopProfile()
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case os.Getenv("DROVER_TEST_DRIVER") == "1":
		flag.Parse()
		os.Exit(orphanDriver())
	}
	// No goroutine of a cluster or backend may outlive its Stop.
	goleak.VerifyTestMain(m)
}

// profileExecutor writes the executor process's CPU profile to
// $DROVER_TEST_EXECUTOR_CPUPROFILE.<pid> when that is set, so the task path
// can be profiled on both sides of the RPC:
//
//	DROVER_TEST_EXECUTOR_CPUPROFILE=/tmp/ex.prof go test -run '^$' -bench NoopTasksLocalCluster$ -cpuprofile /tmp/driver.prof ./internal/local/
func profileExecutor() func() {
	path := os.Getenv("DROVER_TEST_EXECUTOR_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

type testCluster struct {
	sched *scheduler.Scheduler
	b     *coarse.Backend
	c     *Cluster
}

func startCluster(t testing.TB, executors, cores, maxFailures int, auth rpc.Auth) *testCluster {
	t.Helper()
	return startClusterWith(t, t.TempDir(), executors, cores, maxFailures, master.Security{Driver: auth, Executors: auth}, nil)
}

// startClusterWith starts a cluster whose driver and executors have their
// own credentials, logging to log (nil: discarded, or stderr with -v).
func startClusterWith(t testing.TB, dir string, executors, cores, maxFailures int, sec master.Security, log *slog.Logger) *testCluster {
	t.Helper()
	return startClusterWithEvents(t, dir, executors, cores, maxFailures, sec, log, nil)
}

// startClusterWithEvents is startClusterWith whose scheduler and backend
// publish to bus.
func startClusterWithEvents(t testing.TB, dir string, executors, cores, maxFailures int, sec master.Security, log *slog.Logger,
	bus *events.Bus) *testCluster {
	t.Helper()
	tc, err := newTestClusterWithEvents(dir, executors, cores, maxFailures, sec, log, bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tc.c.Stopping()
		_ = tc.b.Stop(ctx)
		_ = tc.c.Stop(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tc.b.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(tc.b.Executors()); n != executors {
		t.Fatalf("%d executors registered, want %d", n, executors)
	}
	return tc
}

// prefetch and maxPrefetch are the drover.scheduler.prefetch and
// drover.scheduler.maxPrefetch the test clusters use: the defaults, unless
// a benchmark changes them.
var (
	prefetch    = config.SchedulerPrefetch.Get(config.New())
	maxPrefetch = config.SchedulerMaxPrefetch.Get(config.New())
)

func newTestCluster(dir string, executors, cores, maxFailures int, sec master.Security, log *slog.Logger) (*testCluster, error) {
	return newTestClusterWithEvents(dir, executors, cores, maxFailures, sec, log, nil)
}

// newTestClusterWithEvents is newTestCluster whose scheduler and backend
// publish to bus.
func newTestClusterWithEvents(dir string, executors, cores, maxFailures int, sec master.Security, log *slog.Logger,
	bus *events.Bus) (*testCluster, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
		if testing.Verbose() {
			log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
		}
	}
	c := NewCluster(ClusterOptions{Binary: os.Args[0], AppID: testApp, Executors: executors, Cores: cores, Auth: sec.Executors, WorkDir: dir + "/work", Logger: log})
	var b *coarse.Backend
	s, err := scheduler.New(scheduler.Options{MaxFailures: maxFailures, Logger: log, Events: bus}, func(s *scheduler.Scheduler) (scheduler.Backend, error) {
		b = coarse.New(s, c, coarse.Options{AppID: testApp, Auth: sec.Driver, InitialExecutors: executors, MinRegisteredRatio: 1,
			MaxRegisteredWait: time.Minute, Prefetch: prefetch, MaxPrefetch: maxPrefetch, Logger: log, Events: bus})
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	if err := b.Start(context.Background()); err != nil {
		return nil, err
	}
	if err := c.Start(b); err != nil {
		return nil, err
	}
	return &testCluster{sched: s, b: b, c: c}, nil
}

func (tc *testCluster) run(ctx context.Context, fn string, payloads []string) ([]string, error) {
	tasks := make([]scheduler.TaskSpec, len(payloads))
	for i, p := range payloads {
		tasks[i] = scheduler.TaskSpec{Partition: i, Payload: []byte(p)}
	}
	out := make([]string, len(payloads))
	err := tc.sched.Run(ctx, scheduler.TaskSetSpec{JobID: 1, StageID: 1, Func: fn, Tasks: tasks,
		OnSuccess: func(p int, r []byte) { out[p] = string(r) }})
	return out, err
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestLocalClusterRunsTasksInSeparateProcesses(t *testing.T) {
	tc := startCluster(t, 3, 1, 4, rpc.Auth{})
	out, err := tc.run(t.Context(), "local.pid", repeat("20", 30))
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]bool{}
	for _, p := range out {
		pids[p] = true
	}
	if pids[strconv.Itoa(os.Getpid())] {
		t.Error("a task ran in the driver process")
	}
	if len(pids) != 3 {
		t.Errorf("tasks ran in %d processes, want 3: %v", len(pids), pids)
	}
}

func TestExecutorKilledMidJobIsReplacedAndTasksAreNotCountedAsFailures(t *testing.T) {
	// maxFailures 1: if the lost tasks counted as failures, the job would fail.
	tc := startCluster(t, 2, 2, 1, rpc.Auth{})
	done := make(chan error, 1)
	var out []string
	go func() {
		var err error
		out, err = tc.run(t.Context(), "local.pid", repeat("300", 12))
		done <- err
	}()
	waitUntil(t, 20*time.Second, "tasks never started", func() bool { return tc.sched.RunningTasks() >= 4 })
	victim := tc.c.Pids()[1]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("job failed after an executor was killed: %v", err)
	}
	for i, p := range out {
		if p == strconv.Itoa(victim) {
			// Fine only if it finished before the kill.
			continue
		}
		if p == "" {
			t.Errorf("partition %d has no result", i)
		}
	}
	// The cluster replaced the lost executor.
	waitUntil(t, 30*time.Second, "lost executor not replaced", func() bool { return len(tc.b.Executors()) == 2 })
}

// waitUntil polls cond until it holds, failing t with what after bound.
// Real time: the executors are processes, outside any synctest bubble.
func waitUntil(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	if wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, bound, true,
		func(context.Context) (bool, error) { return cond(), nil }) != nil {
		t.Fatal(what)
	}
}

func TestExecutorExitCausedByTheAppCountsAsFailure(t *testing.T) {
	tc := startCluster(t, 2, 1, 2, rpc.Auth{})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, err := tc.run(ctx, "local.exit3", []string{""})
	if err == nil || !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), "failed 2 times") {
		t.Fatalf("error = %v, want the task to fail twice with the executor's exit code 3", err)
	}
}

func TestPanickingTaskFailsTheJobWithThePanicMessage(t *testing.T) {
	tc := startCluster(t, 1, 2, 2, rpc.Auth{})
	_, err := tc.run(t.Context(), "local.panic", repeat("", 3))
	if err == nil || !strings.Contains(err.Error(), "panic: bad record 1") || !strings.Contains(err.Error(), "local_test.go") {
		t.Fatalf("error = %v, want the panic message and its stack", err)
	}
	// The executor survived the panics.
	if n := len(tc.b.Executors()); n != 1 {
		t.Errorf("%d executors after panicking tasks, want 1", n)
	}
}

func TestSIGTERMFinishesRunningTasksThenExits(t *testing.T) {
	tc := startCluster(t, 2, 1, 1, rpc.Auth{})
	pids := tc.c.Pids()
	dir := t.TempDir()
	done := make(chan error, 1)
	var out []string
	go func() {
		var err error
		out, err = tc.run(t.Context(), "local.started", repeat("700 "+dir, 2))
		done <- err
	}()
	// The signal must find the task running in the executor, not merely
	// offered to it: a draining executor refuses a launch it has not read.
	waitUntil(t, 30*time.Second, fmt.Sprintf("no task started in executor process %d after 30s", pids[1]), func() bool {
		_, err := os.Stat(filepath.Join(dir, strconv.Itoa(pids[1])))
		return err == nil
	})
	if err := syscall.Kill(pids[1], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("job failed: %v", err)
	}
	// The terminated executor finished its task rather than losing it.
	found := false
	for _, p := range out {
		found = found || p == strconv.Itoa(pids[1])
	}
	if !found {
		t.Errorf("no result came from the SIGTERMed executor %d: %v", pids[1], out)
	}
	var ws syscall.WaitStatus
	waitUntil(t, 10*time.Second, "SIGTERMed executor still running", func() bool {
		if syscall.Kill(pids[1], 0) != nil {
			return true
		}
		_, _ = syscall.Wait4(pids[1], &ws, syscall.WNOHANG, nil)
		return false
	})
}

func TestAuthenticatedLocalCluster(t *testing.T) {
	tc := startCluster(t, 2, 1, 1, rpc.Auth{AppID: testApp, Secret: rpc.NewSecret()})
	if _, err := tc.run(t.Context(), "local.noop", repeat("", 10)); err != nil {
		t.Fatal(err)
	}
}

// orphanDriver runs in a child process: a driver with two executors that
// prints their pids and waits to be killed.
func orphanDriver() int {
	dir, err := os.MkdirTemp("", "drover-orphan")
	if err != nil {
		return 1
	}
	tc, err := newTestCluster(dir, 2, 1, 1, master.Security{}, nil)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tc.b.WaitReady(ctx); err != nil {
		return 1
	}
	// A task on each executor proves both finished registering before the
	// driver dies (a driver killed mid-registration leaves its executor
	// retrying for spark.network.timeout, which is a different test).
	if _, err := tc.run(ctx, "local.pid", repeat("200", 2)); err != nil {
		return 1
	}
	for _, pid := range tc.c.Pids() {
		fmt.Println("executor", pid)
	}
	fmt.Println("ready")
	time.Sleep(2 * time.Minute) // real time: this driver process lives until the test kills it
	return 0
}

func TestExecutorsExitAfterTheirDriverIsKilled(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DROVER_TEST_DRIVER=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var pids []int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			break
		}
		if p, ok := strings.CutPrefix(line, "executor "); ok {
			pid, _ := strconv.Atoi(p)
			pids = append(pids, pid)
		}
	}
	if len(pids) != 2 {
		t.Fatalf("driver reported executors %v, want 2", pids)
	}
	for _, pid := range pids {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The executors are not the driver's process group: only their own
	// driver-loss detection can end them.
	for _, pid := range pids {
		waitUntil(t, 30*time.Second, fmt.Sprintf("executor %d still running 30s after its driver was killed", pid),
			func() bool { return !alive(pid) })
	}
}

// alive reports whether pid runs; an exited child of the killed driver is
// reparented and reaped by init, or left a zombie we treat as gone.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}

func TestLocalModeRunsTasksAsGoroutines(t *testing.T) {
	var b *Backend
	s, err := scheduler.New(scheduler.Options{MaxFailures: 1}, func(s *scheduler.Scheduler) (scheduler.Backend, error) {
		b = NewBackend(s, 4, 0)
		return b, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Stop(context.Background()) }()
	if got := b.DefaultParallelism(); got != 4 {
		t.Errorf("DefaultParallelism = %d, want 4", got)
	}
	tc := &testCluster{sched: s}
	out, err := tc.run(t.Context(), "local.pid", repeat("1", 20))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range out {
		if p != strconv.Itoa(os.Getpid()) {
			t.Fatalf("local mode ran a task in process %s", p)
		}
	}
	_, err = tc.run(t.Context(), "local.panic", repeat("", 3))
	if err == nil || !strings.Contains(err.Error(), "bad record 1") || !strings.Contains(err.Error(), "failed 1 times") {
		t.Fatalf("error = %v, want the panic after one attempt (local mode does not retry)", err)
	}
}

// sleepThenPid waits ms milliseconds (a decimal string) and answers with
// the process's id.
func sleepThenPid(ctx context.Context, ms string) ([]byte, error) {
	n, _ := strconv.Atoi(ms)
	select {
	case <-time.After(time.Duration(n) * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []byte(strconv.Itoa(os.Getpid())), nil
}
