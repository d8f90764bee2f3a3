package drover

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/eventlog"
)

// observabilityConf turns the web UI (with its metrics) and the event log
// on or off; the console progress is off in both, as in a batch job.
func observabilityConf(on bool, dir string) []string {
	return []string{"--conf", "spark.ui.enabled=" + strconv.FormatBool(on), "--conf", "spark.ui.port=0",
		"--conf", "spark.eventLog.enabled=" + strconv.FormatBool(on), "--conf", "spark.eventLog.dir=" + dir,
		"--conf", "spark.ui.showConsoleProgress=false", "--conf", "drover.log.level=warn"}
}

// BenchmarkObservabilityOverhead is what the web UI, the metrics and the
// event log cost the task path: drivers on local-cluster[4,1,512] run a
// job of 100,000 no-op tasks, in turn with everything on and everything
// off (which goes first alternates, so both see the same machine load).
// Each driver is its own process, as BenchmarkObservabilityDriverRSS's:
// one driver's garbage, and its collector's work, never falls into
// another's job, and a job long enough to hold many collections measures
// them, not where one happened to fall. It reports each one's tasks/s over
// all iterations, and on/off (1 is no cost) as the median of the
// iterations' ratios: a burst of load from elsewhere moves one pair, not
// the figure.
//
//	go test -run '^$' -bench ObservabilityOverhead -benchtime 150x .
func BenchmarkObservabilityOverhead(b *testing.B) {
	var took [2]time.Duration // off, on
	var ratios []float64
	for i := 0; b.Loop(); i++ {
		var pair [2]time.Duration
		for j := range 2 {
			on := (i+j)%2 == 1
			d := runObservabilityDriver(b, on, b.TempDir()).job
			took[boolIndex(on)] += d
			pair[boolIndex(on)] = d
		}
		ratios = append(ratios, pair[0].Seconds()/pair[1].Seconds())
	}
	off := float64(rssTasks*b.N) / took[0].Seconds()
	on := float64(rssTasks*b.N) / took[1].Seconds()
	b.ReportMetric(off, "off-tasks/s")
	b.ReportMetric(on, "on-tasks/s")
	b.ReportMetric(median(ratios), "on/off")
}

// observabilityRun is what one driver process of the observability
// benchmarks measured.
type observabilityRun struct {
	job     time.Duration // the job's run time, from its start to its result
	peakKiB int64         // the process's peak resident set
}

// runObservabilityDriver runs this test binary as a driver of rssTasks
// no-op tasks (rssDriverMain) with the UI, metrics and event log (into
// dir) on or off.
func runObservabilityDriver(b *testing.B, on bool, dir string) observabilityRun {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{"--master", "local-cluster[4,1,512]"}, observabilityConf(on, dir)...)...)
	cmd.Env = append(os.Environ(), envRSSDriver+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("driver (on=%v): %v\n%s", on, err, stderr.String())
	}
	var r observabilityRun
	var ns int64
	if _, err := fmt.Sscanf(strings.TrimSpace(stdout.String()), "peak-rss-kib %d\njob-ns %d", &r.peakKiB, &ns); err != nil {
		b.Fatalf("driver output %q: %v", stdout.String(), err)
	}
	r.job = time.Duration(ns)
	return r
}

// median is the middle of xs, or the mean of the two middle ones.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// envRSSDriver makes the test binary a driver that runs 100,000 no-op
// tasks and prints its own peak RSS (VmHWM) and the job's run time at the
// end: the driver process of the observability benchmarks.
const envRSSDriver = "DROVER_TEST_RSS_DRIVER"

// rssTasks is the size of the job of the observability benchmarks.
const rssTasks = 100_000

// checkHistoryHasEveryTask replays the event log in dir into the store a
// history server would serve, with Spark's retention defaults: the
// memory saved on the driver must not have cost the log or the store a
// task.
func checkHistoryHasEveryTask(b *testing.B, dir string, tasks int) {
	b.Helper()
	logs, err := eventlog.List(context.Background(), dir, nil)
	if err != nil || len(logs) != 1 {
		b.Fatalf("event logs in %s: %v, %v", dir, logs, err)
	}
	store := appstate.New(appstate.DefaultOptions())
	if _, err := eventlog.Replay(context.Background(), logs[0], store.Handle); err != nil {
		b.Fatal(err)
	}
	stages := store.Stages()
	if len(stages) != 1 {
		b.Fatalf("the history of the job shows %d stages, want 1", len(stages))
	}
	st, _, _ := store.StageTasks(stages[0].ID, stages[0].Attempt, appstate.TaskQuery{})
	if st.Remembered != tasks || st.CompleteTasks != tasks || st.ForgottenTasks != 0 {
		b.Fatalf("the history of the job shows its stage with %d tasks remembered, %d complete, %d forgotten: want all %d",
			st.Remembered, st.CompleteTasks, st.ForgottenTasks, tasks)
	}
}

// rssDriverMain is the driver process of the observability benchmarks:
// its arguments are drover's flags.
func rssDriverMain() int {
	inputs := make([]int, rssTasks)
	if p := os.Getenv(envRSSHeapProfile); p != "" {
		runtime.MemProfileRate = 4 << 10 // fine enough to see a few kB
		stop := profileHeapPeak(p)
		defer stop()
	}
	if p := os.Getenv(envRSSCPUProfile); p != "" {
		stop, err := profileCPU(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop()
	}
	var job time.Duration
	code := Run(os.Args[1:], os.Stderr, func(ctx *Context) error {
		start := time.Now()
		_, err := RunPartitions(ctx, testNoop, inputs)
		job = time.Since(start)
		if err == nil && slices.Contains(os.Args, "spark.ui.enabled=true") && ctx.UIWebURL() == "" {
			return fmt.Errorf("the UI is not served")
		}
		return err
	})
	if code == 0 {
		kib, err := peakRSSKiB()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("peak-rss-kib %d\njob-ns %d\n", kib, job.Nanoseconds())
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
			// The driver's own CPU, its executors' left out: what
			// observability adds shows here first.
			cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			fmt.Fprintf(os.Stderr, "driver-cpu-ms %d\n", cpu.Milliseconds())
		}
	}
	return code
}

// envRSSHeapProfile names a file where the driver of
// BenchmarkObservabilityDriverRSS writes a heap profile taken when its
// live heap peaked, to see where the memory goes:
//
//	DROVER_TEST_RSS_HEAPPROFILE=/tmp/heap go test -run '^$' -bench ObservabilityDriverRSS -benchtime 1x .
const envRSSHeapProfile = "DROVER_TEST_RSS_HEAPPROFILE"

// envRSSCPUProfile names a file where the driver of
// BenchmarkObservabilityDriverRSS writes a CPU profile of its whole run, to
// see what observability costs the task path:
//
//	DROVER_TEST_RSS_CPUPROFILE=/tmp/cpu go test -run '^$' -bench ObservabilityDriverRSS -benchtime 1x .
//	go tool pprof -top -diff_base /tmp/cpu.off.pb.gz /tmp/cpu.on.pb.gz
const envRSSCPUProfile = "DROVER_TEST_RSS_CPUPROFILE"

// profileCPU writes a CPU profile to path.<on or off>.pb.gz until the
// returned stop.
func profileCPU(path string) (stop func(), err error) {
	f, err := os.Create(profilePath(path))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// profilePath is path with the driver's observability, on or off, and the
// profile's extension appended.
func profilePath(path string) string {
	return path + "." + map[bool]string{true: "on", false: "off"}[slices.Contains(os.Args, "spark.ui.enabled=true")] + ".pb.gz"
}

// profileHeapPeak watches the live heap and writes a heap profile to
// path.<on or off>.pb.gz (the driver's spark.ui.enabled) each time it grows by
// more than 1%, until the returned stop.
func profileHeapPeak(path string) (stop func()) {
	path = profilePath(path)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak+peak/100 {
				peak = v
				f, err := os.Create(path)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return
				}
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
	}()
	return func() { close(done); <-finished }
}

// peakRSSKiB is this process's peak resident set (VmHWM), in KiB.
func peakRSSKiB() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// BenchmarkObservabilityDriverRSS is the driver's peak RSS over a job of
// 100,000 no-op tasks on local-cluster[4,1,512], with the web UI, metrics
// and event log on and off: each driver is its own process (this test
// binary), so its peak is its own.
//
//	go test -run '^$' -bench ObservabilityDriverRSS -benchtime 2x .
func BenchmarkObservabilityDriverRSS(b *testing.B) {
	var peak [2]int64 // the largest of the runs, off and on
	for i := 0; b.Loop(); i++ {
		for j := range 2 {
			on := (i+j)%2 == 1
			dir := b.TempDir()
			r := runObservabilityDriver(b, on, dir)
			peak[boolIndex(on)] = max(peak[boolIndex(on)], r.peakKiB)
			if on {
				checkHistoryHasEveryTask(b, dir, rssTasks)
			}
		}
	}
	b.ReportMetric(float64(peak[0])/1024, "off-MiB")
	b.ReportMetric(float64(peak[1])/1024, "on-MiB")
	b.ReportMetric(float64(peak[1])/float64(peak[0]), "on/off")
}
