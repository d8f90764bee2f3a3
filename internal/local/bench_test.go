package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/metrics"
	"github.com/drover-project/drover/internal/progress"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/scheduler"
)

// BenchmarkNoopTasksLocalCluster measures scheduling throughput: no-op tasks
// on local-cluster[4,1,512] (four executor processes of one core each, gRPC
// over loopback). Each op is one job of 20,000 tasks; the tasks/s metric is
// the figure to compare.
//
//	go test -run '^$' -bench NoopTasks -benchtime 5x ./internal/local/
func BenchmarkNoopTasksLocalCluster(b *testing.B) {
	benchmarkNoop(b, func(b *testing.B) *testCluster { return startCluster(b, 4, 1, 4, rpc.Auth{}) })
}

// BenchmarkNoopTasksLocalClusterNoPrefetch is the same with
// drover.scheduler.prefetch=0: one task per core at a time, as in Spark.
func BenchmarkNoopTasksLocalClusterNoPrefetch(b *testing.B) {
	old := prefetch
	prefetch = 0
	defer func() { prefetch = old }()
	BenchmarkNoopTasksLocalCluster(b)
}

// BenchmarkNoopTasksLocal is the same job in local[4]: goroutines, no RPC.
func BenchmarkNoopTasksLocal(b *testing.B) {
	benchmarkNoop(b, func(b *testing.B) *testCluster {
		var lb *Backend
		s, err := scheduler.New(scheduler.Options{MaxFailures: 1}, func(s *scheduler.Scheduler) (scheduler.Backend, error) {
			lb = NewBackend(s, 4, 0)
			return lb, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := lb.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = lb.Stop(context.Background()) })
		return &testCluster{sched: s}
	})
}

func benchmarkNoop(b *testing.B, start func(*testing.B) *testCluster) {
	const tasksPerJob = 20_000
	tc := start(b)
	payloads := repeat("", tasksPerJob)
	before := cpuOf(b, tc)
	b.ResetTimer()
	for b.Loop() {
		if _, err := tc.run(context.Background(), "local.noop", payloads); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	tasks := float64(tasksPerJob * b.N)
	b.ReportMetric(tasks/b.Elapsed().Seconds(), "tasks/s")
	if tc.c == nil {
		return
	}
	// Where the CPU goes per task: user and kernel time of the driver
	// (this process) and of the executor processes together.
	after := cpuOf(b, tc)
	b.ReportMetric(float64(after.driverUser-before.driverUser)/tasks/1e3, "driver-user-µs/task")
	b.ReportMetric(float64(after.driverSys-before.driverSys)/tasks/1e3, "driver-sys-µs/task")
	b.ReportMetric(float64(after.execUser-before.execUser)/tasks/1e3, "executors-user-µs/task")
	b.ReportMetric(float64(after.execSys-before.execSys)/tasks/1e3, "executors-sys-µs/task")
}

// cpuTimes are CPU times in nanoseconds.
type cpuTimes struct{ driverUser, driverSys, execUser, execSys int64 }

// cpuOf reads the CPU time this process and the cluster's executor
// processes have used so far.
func cpuOf(b *testing.B, tc *testCluster) cpuTimes {
	var t cpuTimes
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	t.driverUser, t.driverSys = ru.Utime.Nano(), ru.Stime.Nano()
	if tc.c == nil {
		return t
	}
	for _, pid := range tc.c.Pids() {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		// Fields 14 and 15 (utime, stime, in clock ticks of 1/100 s on
		// Linux) follow the command name, which ends with ")".
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		utime, err1 := strconv.ParseInt(f[11], 10, 64)
		stime, err2 := strconv.ParseInt(f[12], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			b.Fatal(err)
		}
		t.execUser += utime * int64(10*time.Millisecond)
		t.execSys += stime * int64(10*time.Millisecond)
	}
	return t
}

// BenchmarkNoopTasksMetricsOverhead measures what the Prometheus metrics cost
// the task path. Two local-cluster[4,1,512] clusters run the same no-op jobs
// of 20,000 tasks in turn: both drivers publish to an event stream with the
// console progress subscribed, as every driver does; the second also keeps
// the metrics and is scraped every second. Alternating the jobs (and which
// goes first) puts both under the same load on a shared machine. It reports
// each one's tasks/s, their ratio (1 is no overhead) and the events the
// metrics dropped.
//
//	go test -run '^$' -bench MetricsOverhead -benchtime 10x ./internal/local/
func BenchmarkNoopTasksMetricsOverhead(b *testing.B) {
	const tasksPerJob = 20_000
	offBus, onBus := events.NewBus(nil, nil), events.NewBus(nil, nil)
	for _, bus := range []*events.Bus{offBus, onBus} {
		bus.Subscribe("progress", 0, (&progress.Tracker{}).Handle)
		b.Cleanup(bus.Close) // after the clusters stop: cleanups run last first
	}
	dm := metrics.NewDriver(metrics.Options{AppID: testApp, AppName: "bench", Bus: onBus}, false)
	consumer := onBus.Subscribe("metrics", 0, dm.Events.Handle)
	off := startClusterWithEvents(b, b.TempDir(), 4, 1, 4, master.Security{}, nil, offBus)
	on := startClusterWithEvents(b, b.TempDir(), 4, 1, 4, master.Security{}, nil, onBus)
	scrapes := make(chan struct{})
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-scrapes:
				return
			case <-t.C:
				if _, err := dm.Registry.Gather(); err != nil {
					b.Error(err)
				}
			}
		}
	}()
	defer func() { close(scrapes); <-scraped }()
	payloads := repeat("", tasksPerJob)
	var offTime, onTime time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		first, second := off, on
		if i%2 == 1 {
			first, second = on, off
		}
		for _, tc := range []*testCluster{first, second} {
			start := time.Now()
			if _, err := tc.run(context.Background(), "local.noop", payloads); err != nil {
				b.Fatal(err)
			}
			if tc == on {
				onTime += time.Since(start)
			} else {
				offTime += time.Since(start)
			}
		}
	}
	b.StopTimer()
	// The metrics saw every task, unless they dropped events.
	want := float64(tasksPerJob * b.N)
	var got float64
	// The events reach the metrics on the bus's goroutine: poll.
	_ = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			got = tasksFinished(b, dm.Registry)
			return got == want, nil
		})
	if got != want && consumer.Dropped() == 0 {
		b.Errorf("the metrics counted %v tasks finished, want %v", got, want)
	}
	offRate := float64(tasksPerJob*b.N) / offTime.Seconds()
	onRate := float64(tasksPerJob*b.N) / onTime.Seconds()
	b.ReportMetric(offRate, "tasks/s-off")
	b.ReportMetric(onRate, "tasks/s-on")
	b.ReportMetric(onRate/offRate, "on/off")
	b.ReportMetric(float64(consumer.Dropped()), "dropped")
}

// tasksFinished is drover_tasks_finished_total{state="success"}.
func tasksFinished(b *testing.B, g prometheus.Gatherer) float64 {
	families, err := g.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "drover_tasks_finished_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" && l.GetValue() == "success" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
