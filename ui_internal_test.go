package drover

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/metrics"
)

// The metrics and the web UI's store share a consumer: a store that panics
// stops its pages, once, and never the metrics or the driver.
func TestStatusConsumerOutlivesABrokenStore(t *testing.T) {
	dm := metrics.NewDriver(metrics.Options{AppID: "drover-1"}, false)
	var logged strings.Builder
	var fed int
	web := &webUI{log: slog.New(slog.NewTextHandler(&logged, nil))}
	web.feed = func(evs []events.Event) {
		fed += len(evs)
		panic("store bug")
	}
	handle := statusConsumer(dm.Events, web)
	for range 3 {
		evs := make([]events.Event, statusChunk+1)
		for i := range evs {
			evs[i] = &events.TaskEnd{TaskID: int64(i), State: events.TaskSuccess}
		}
		handle(evs) // must not panic
	}
	finished := tasksFinished(t, dm)
	if diff := cmp.Diff([]float64{3 * (statusChunk + 1), statusChunk}, []float64{finished, float64(fed)}); diff != "" {
		t.Errorf("tasks the metrics counted, events the store was fed (-want +got):\n%s", diff)
	}
	if n := strings.Count(logged.String(), "the web UI's state store failed"); n != 1 {
		t.Errorf("the store's failure was logged %d times, want once:\n%s", n, logged.String())
	}
}

// tasksFinished is drover_tasks_finished_total{state="success"} of dm.
func tasksFinished(t *testing.T, dm *metrics.Driver) float64 {
	t.Helper()
	families, err := dm.Registry.Gather()
	if err != nil {
		t.Fatal(err)
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
	t.Fatal("no drover_tasks_finished_total{state=\"success\"}")
	return 0
}
