package coarse

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
	"github.com/drover-project/drover/internal/scheduler"
)

// BenchmarkDriverPerExecutor is what each registered executor costs the
// driver's RPC side alone, without Kubernetes: a backend with mutual TLS
// (the default on Kubernetes) in this process, and N executors over the
// real RPC in a child process, so the figures are the driver's. It reports
// the heap, stack and goroutines each executor adds once all registered
// (after a GC), and the driver's CPU time until then.
//
//	DROVER_CONN_N=5000 go test -run '^$' -bench DriverPerExecutor -benchtime 1x ./internal/backend/coarse/
//
// DROVER_CONN_N is the number of executors (default 1,000);
// DROVER_CONN_PROFILE=/path/prefix writes the driver's heap and goroutine
// profiles once all registered (prefix.heap, prefix.goroutine, sampling
// every 512 bytes allocated); DROVER_CONN_CPUPROFILE=/path its CPU profile.
func BenchmarkDriverPerExecutor(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("DROVER_CONN_N")); err == nil && v > 0 {
		n = v
	}
	for b.Loop() {
		r := driverPerExecutor(b, n)
		b.ReportMetric(r.heap/float64(n)/1024, "heap-KiB/executor")
		b.ReportMetric(r.stack/float64(n)/1024, "stack-KiB/executor")
		b.ReportMetric(r.goroutines/float64(n), "goroutines/executor")
		b.ReportMetric(r.cpu.Seconds(), "driver-cpu-s-to-registered")
		b.ReportMetric(r.elapsed.Seconds(), "s-to-registered")
		b.ReportMetric(float64(r.peakRSS)/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(r.peakRSSStopped)/(1<<20), "peak-rss-with-stop-MiB")
	}
}

type perExecutor struct {
	heap, stack, goroutines float64
	cpu, elapsed            time.Duration
	peakRSS                 int64 // the test process's, so the driver's with a small floor
	peakRSSStopped          int64 // the same once the backend stopped
}

// connChildEnv tells the test binary to run the executors of
// BenchmarkDriverPerExecutor: JSON connChild.
const connChildEnv = "DROVER_CONN_CHILD"

type connChild struct {
	URL, BundleFile string
	N               int
}

func driverPerExecutor(b *testing.B, n int) perExecutor {
	authority, err := mtls.NewAuthority(appID, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	driverBundle, err := authority.Issue(mtls.RoleDriver)
	if err != nil {
		b.Fatal(err)
	}
	execBundle, err := authority.Issue(mtls.RoleExecutor)
	if err != nil {
		b.Fatal(err)
	}
	bundleFile := b.TempDir() + "/bundle"
	if err := os.WriteFile(bundleFile, execBundle.Encode(), 0o600); err != nil {
		b.Fatal(err)
	}
	auth, err := rpc.Auth{}.WithTLS(driverBundle, quiet)
	if err != nil {
		b.Fatal(err)
	}

	if os.Getenv("DROVER_CONN_PROFILE") != "" {
		// Every allocation of 512 bytes on average, so that a profile
		// accounts for each executor's kilobytes.
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 512
	}
	if path := os.Getenv("DROVER_CONN_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutinesBefore := runtime.NumGoroutine()
	cpuBefore := processCPU()

	_, be := newOn(scheduler.Options{MaxFailures: 4}, nil, Options{AppID: appID, Auth: auth, Logger: quiet, InitialExecutors: n,
		MinRegisteredRatio: 1, MaxRegisteredWait: 10 * time.Minute})
	start := time.Now()
	if err := be.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	params, _ := json.Marshal(connChild{URL: be.URL(), BundleFile: bundleFile, N: n})
	cmd := exec.CommandContext(b.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), connChildEnv+"="+string(params))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = be.Stop(context.Background())
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	if err := be.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	r := perExecutor{elapsed: time.Since(start), cpu: processCPU() - cpuBefore, peakRSS: peakRSS()}
	if got := len(be.Executors()); got < n {
		b.Fatalf("%d of %d executors registered", got, n)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	r.heap = float64(after.HeapInuse) - float64(before.HeapInuse)
	r.stack = float64(after.StackInuse) - float64(before.StackInuse)
	r.goroutines = float64(runtime.NumGoroutine() - goroutinesBefore)
	if prefix := os.Getenv("DROVER_CONN_PROFILE"); prefix != "" {
		for _, name := range []string{"heap", "goroutine"} {
			f, err := os.Create(prefix + "." + name)
			if err != nil {
				b.Fatal(err)
			}
			_ = pprof.Lookup(name).WriteTo(f, 0)
			f.Close()
		}
	}
	// The stop: every executor told to shut down, every stream ended.
	if err := be.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
	r.peakRSSStopped = peakRSS()
	b.Logf("%d executors registered in %s; driver CPU %.2f s; per executor: heap %.1f KiB, stacks %.1f KiB, %.2f goroutines; peak RSS %d MiB, %d MiB with the stop",
		n, r.elapsed.Round(time.Millisecond), r.cpu.Seconds(), r.heap/float64(n)/1024, r.stack/float64(n)/1024, r.goroutines/float64(n), r.peakRSS>>20, r.peakRSSStopped>>20)
	return r
}

// peakRSS is the process's peak resident set so far, in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10 // Linux reports kilobytes
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// connChildMain runs the executors of BenchmarkDriverPerExecutor until the
// driver shuts them down.
func connChildMain(raw string) error {
	var p connChild
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return err
	}
	pem, err := os.ReadFile(p.BundleFile)
	if err != nil {
		return err
	}
	bundle, err := mtls.Decode(appID, pem)
	if err != nil {
		return err
	}
	auth, err := rpc.Auth{}.WithTLS(bundle, quiet)
	if err != nil {
		return err
	}
	// Executors arrive over time, as pods start: one a millisecond.
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := 1; i <= p.N; i++ {
		<-tick.C
		wg.Go(func() {
			_ = executor.Run(context.Background(), executor.Options{DriverURL: p.URL, AppID: appID,
				ExecutorID: executorid.ID(i), Cores: 1, Auth: auth, Logger: quiet})
		})
	}
	wg.Wait()
	return nil
}
