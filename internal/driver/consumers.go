package driver

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/metrics"
	"github.com/drover-project/drover/internal/progress"
)

// consumerLinger is how late the driver's pages, metrics and event log may
// see an event (Spark's live UI updates every 100 ms): they take the
// stream a batch at a time, gathered over this long or until a quarter of
// their queue is full, waking tens of times a second at the scheduler's
// pace instead of once or twice per task; each wake costs the process
// tens of microseconds, which the tasks pay for when the cores are busy.
const consumerLinger = 10 * time.Millisecond

// statusQueue names the consumer of statusConsumer
// (drover_events_dropped_total's label).
const statusQueue = "status"

// statusChunk is how many events statusConsumer hands each of its
// handlers in turn: the next reads them while the one before left them in
// the processor's cache.
const statusChunk = 64

// statusConsumer feeds the metrics, the web UI's store and the event log
// (web and evlog nil when off) from one consumer of the event stream, of
// capacity events. None of them waits for anything but memory (the event
// log hands its bytes to a goroutine of its own, which writes them), so
// none holds the others up, and one goroutine wakes once per batch and
// reads each event for all three while it is in the cache. (The no-op
// task throughput with all three on did not measurably change against a
// consumer each: see docs/benchmarks-notes.md, 26 Nov.) A store that
// panics stops its pages only. The queue is the event log's when it
// is on: deeper than the others', since the log must not lose events.
func statusConsumer(m *metrics.Metrics, web *webUI, evlog *eventlog.Writer) (capacity int, handle func([]events.Event)) {
	handlers := []func([]events.Event){m.HandleAll}
	if web != nil {
		handlers = append(handlers, web.handle)
	}
	if evlog != nil {
		capacity = 10 * events.DefaultCapacity
		handlers = append(handlers, evlog.HandleAll)
	}
	if len(handlers) == 1 {
		return capacity, m.HandleAll
	}
	return capacity, func(evs []events.Event) {
		for len(evs) > 0 {
			n := min(len(evs), statusChunk)
			for _, h := range handlers {
				h(evs[:n])
			}
			evs = evs[n:]
		}
	}
}

// subscribeProgress subscribes the console progress bar's tracker when
// spark.ui.showConsoleProgress; nil when it is off.
func subscribeProgress(conf *config.Conf, bus *events.Bus) *progress.Tracker {
	if !config.ShowConsoleProgress.Get(conf) {
		return nil
	}
	tracker := &progress.Tracker{}
	bus.Subscribe("progress", 0, tracker.Handle)
	return tracker
}

// startProgress draws the progress bar on console (or a line every
// drover.progress.interval in a log) until the returned function is called.
func startProgress(ctx context.Context, conf *config.Conf, tracker *progress.Tracker, console io.Writer) (stop func()) {
	progressCtx, stopProgress := context.WithCancel(ctx)
	reporter := &progress.Reporter{W: console, Terminal: isTerminal(console), Interval: config.ProgressInterval.Get(conf),
		Source: tracker.Stages, Waiting: tracker.Waiting}
	done := make(chan struct{})
	go func() { reporter.Run(progressCtx); close(done) }()
	return func() { stopProgress(); <-done }
}

// isTerminal reports whether w is a character device: a progress bar can
// be redrawn in place there, not in a log file or pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
