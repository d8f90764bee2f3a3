package drover

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/funcs"
)

var (
	square = Register("test.square", func(_ *TaskContext, n int) (int, error) { return n * n, nil })
	fails  = Register("test.fails", func(tc *TaskContext, s string) (string, error) {
		if s == "bad" {
			panic("bad record: " + s)
		}
		return strings.ToUpper(s), nil
	})
	withChan = Register("test.chan", func(_ *TaskContext, c chan int) (int, error) { return 0, nil })
)

// binaryModes let the test binary be another process an integration test
// started (a driver under chaos); afterTests stop what the tests shared (the
// control plane). The integration files' init fill both.
var (
	binaryModes []func() (handled bool, code int)
	afterTests  []func()
)

// TestMain freezes registration as Main does, lets the test binary be an
// executor process for local-cluster tests, and fails the package when a
// goroutine a test started outlives it.
func TestMain(m *testing.M) {
	funcs.Freeze()
	if os.Getenv(envvar.Role) == envvar.RoleExecutor {
		os.Exit(runExecutor())
	}
	if os.Getenv(envRSSDriver) != "" {
		os.Exit(rssDriverMain())
	}
	for _, mode := range binaryModes {
		if ok, code := mode(); ok {
			os.Exit(code)
		}
	}
	code := m.Run()
	for _, f := range afterTests {
		f()
	}
	if code == 0 {
		if err := goleak.Find(leakOptions...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions ignore process-wide goroutines started once and kept.
var leakOptions = []goleak.Option{
	// klog's flush daemon, started by client-go's logging on first use.
	goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
}

func TestRunPartitionsInEveryLocalMode(t *testing.T) {
	for _, master := range []string{"local", "local[3]", "local[*]", "local-cluster[2,1,256]"} {
		t.Run(master, func(t *testing.T) {
			var stderr bytes.Buffer
			var got []int
			code := runDriver([]string{"--master", master, "--conf", "drover.log.level=warn", "x"}, &stderr, func(ctx *Context) error {
				if diff := strings.Join(ctx.Args(), ","); diff != "x" {
					t.Errorf("Args = %q, want [x]", ctx.Args())
				}
				var err error
				got, err = RunPartitions(ctx, square, []int{1, 2, 3, 4, 5, 6, 7})
				return err
			})
			if code != 0 {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
			}
			want := []int{1, 4, 9, 16, 25, 36, 49}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("results %v, want %v", got, want)
				}
			}
		})
	}
}

func TestPanickingTaskFailsTheJobWithItsMessage(t *testing.T) {
	var stderr bytes.Buffer
	var jobErr error
	code := runDriver([]string{"--master", "local-cluster[1,2,256]", "--conf", "spark.task.maxFailures=2", "--conf", "drover.log.level=error"}, &stderr,
		func(ctx *Context) error {
			_, jobErr = RunPartitions(ctx, fails, []string{"ok", "bad", "fine"})
			return jobErr
		})
	if code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	for _, want := range []string{"panic: bad record: bad", "failed 2 times", "drover_test.go"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not contain %q:\n%s", want, stderr.String())
		}
	}
}

func TestBadInputStopsBeforeAnythingStarts(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"bad memory":         {[]string{"--conf", "spark.executor.memory=4gg"}, `invalid value "4gg" for spark.executor.memory`},
		"not an integer":     {[]string{"--conf", "spark.executor.instances=abc"}, "spark.executor.instances"},
		"negative":           {[]string{"--conf", "spark.task.maxFailures=-1"}, "spark.task.maxFailures"},
		"empty key":          {[]string{"--conf", "=3"}, "=3"},
		"missing file":       {[]string{"--properties-file", "/nonexistent/drover.conf"}, "/nonexistent/drover.conf"},
		"unknown drover key": {[]string{"--conf", "drover.log.levle=info"}, "drover.log.level"},
		"bad master":         {[]string{"--master", "local[0]"}, `invalid master URL "local[0]"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			ran := false
			code := runDriver(tc.args, &stderr, func(*Context) error { ran = true; return nil })
			if code != 2 || ran {
				t.Fatalf("exit code %d (ran=%v), want 2 before running; stderr:\n%s", code, ran, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not name %q", stderr.String(), tc.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr.String()), "\n"); n > 0 {
				t.Errorf("want one line of error, got:\n%s", stderr.String())
			}
		})
	}
}

func TestFunctionsThatCannotBeUsed(t *testing.T) {
	late := Register("test.late", func(_ *TaskContext, n int) (int, error) { return n, nil })
	if !errors.Is(late.Err(), funcs.ErrFrozen) {
		t.Errorf("registering after start: Err() = %v, want ErrFrozen", late.Err())
	}
	if withChan.Err() == nil || !strings.Contains(withChan.Err().Error(), "chan") {
		t.Errorf("chan input: Err() = %v, want an encoding error", withChan.Err())
	}
	var stderr bytes.Buffer
	code := runDriver([]string{"--master", "local", "--conf", "drover.log.level=error"}, &stderr, func(ctx *Context) error {
		if _, err := RunPartitions(ctx, late, []int{1}); !errors.Is(err, funcs.ErrFrozen) {
			t.Errorf("RunPartitions with a late function: %v", err)
		}
		if _, err := RunPartitions(ctx, withChan, []chan int{nil}); err == nil {
			t.Error("RunPartitions with a chan input succeeded")
		}
		return nil
	})
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
}

// A panic in the job ends the application through its error path, so the
// cluster manager still stops its executors (deferred in drive).
func TestPanickingDriverStillStopsItsExecutors(t *testing.T) {
	var stderr bytes.Buffer
	code := runDriver([]string{"--master", "local-cluster[1,1,256]", "--conf", "drover.log.level=info"}, &stderr,
		func(*Context) error { panic("driver bug") })
	if code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	out := stderr.String()
	for _, want := range []string{"drover: the application panicked: driver bug", "drover_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
}
