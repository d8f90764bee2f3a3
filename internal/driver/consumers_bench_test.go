package driver

import (
	"context"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/metrics"
)

// BenchmarkConsumersPerTask is the CPU the driver's event consumers spend
// per no-op task, wired as the driver wires them ("off": the metrics
// alone; "on": with the UI's store and the event log beside them), fed as the
// scheduler feeds them no-op tasks: the ends, with their starts, of a
// section at a time, paced at 300,000 tasks a second. It reports the process's CPU (user +
// kernel, the collector's included) per task, which the machine's load
// moves far less than BenchmarkObservabilityOverhead's wall time: on
// minus off is what observability costs a task.
//
//	go test -run '^$' -bench ConsumersPerTask -benchtime 300000x .
func BenchmarkConsumersPerTask(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			bus := events.NewBus(nil, nil)
			dm := metrics.NewDriver(metrics.Options{AppID: "drover-1", Bus: bus}, false)
			var web *webUI
			var w *eventlog.Writer
			if on {
				web = &webUI{store: appstate.New(appstate.DefaultOptions()), log: slog.New(slog.DiscardHandler)}
				web.feed = web.store.HandleAll
				var err error
				w, err = eventlog.Start(context.Background(), eventlog.Options{Dir: b.TempDir(), AppID: "drover-1", Codec: "zstd"})
				if err != nil {
					b.Fatal(err)
				}
			}
			capacity, handle := statusConsumer(dm.Events, web, w)
			consumer := bus.SubscribeBatches(statusQueue, capacity, consumerLinger, handle)
			bus.PublishAll([]events.Event{&events.AppStart{AppID: "drover-1"}, &events.JobStart{JobID: 1},
				&events.StageSubmitted{JobID: 1, StageID: 0, NumTasks: b.N}})
			for x := range 4 {
				bus.Publish(&events.ExecutorAdded{Executor: executorid.ID(x + 1), Cores: 1})
			}
			cpu0 := processCPU()
			start := time.Now()
			const section, perSecond = 8, 300_000
			var ends []events.Event
			launch := time.Now().Truncate(time.Microsecond).UTC()
			for i := 0; i < b.N; i += section {
				// As the scheduler publishes tasks that end within
				// scheduler.StartDelay: one TaskEnd with its launch.
				n := min(section, b.N-i)
				executor := executorid.ID(1 + i/section%4)
				slab := make([]events.TaskEnd, n)
				ends = ends[:0]
				for j := range n {
					id := i + j
					slab[j] = events.TaskEnd{TaskID: int64(id), Partition: id, Executor: executor, State: events.TaskSuccess,
						Launch: launch, Duration: time.Duration(id%3) * time.Microsecond, Metrics: events.TaskMetrics{ResultBytes: 1}}
					ends = append(ends, &slab[j])
				}
				bus.PublishAll(ends)
				if i%256 == 0 {
					launch = time.Now().Truncate(time.Microsecond).UTC()
					if d := time.Until(start.Add(time.Duration(i) * time.Second / perSecond)); d > 0 {
						time.Sleep(d) // real time: the benchmark paces a real event rate
					}
				}
			}
			bus.Publish(&events.StageCompleted{StageID: 0})
			bus.Close()
			if w != nil {
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			cpu := processCPU() - cpu0
			if consumer.Dropped() > 0 {
				b.Fatalf("the consumer dropped %d events: it did not keep up", consumer.Dropped())
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/task")
		})
	}
}

// processCPU is the CPU time this process has used, user and kernel.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
