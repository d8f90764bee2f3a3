package driver

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
	_, handle := statusConsumer(dm.Events, web, nil)
	for range 3 {
		evs := make([]events.Event, statusChunk+1)
		for i := range evs {
			evs[i] = &events.TaskEnd{TaskID: int64(i), State: events.TaskSuccess}
		}
		handle(evs) // must not panic
	}
	if err := testutil.GatherAndCompare(dm.Registry, strings.NewReader(fmt.Sprintf(`
# HELP drover_tasks_finished_total Task attempts finished, by state: success, failed, killed.
# TYPE drover_tasks_finished_total counter
drover_tasks_finished_total{state="failed"} 0
drover_tasks_finished_total{state="killed"} 0
drover_tasks_finished_total{state="success"} %d
`, 3*(statusChunk+1))), "drover_tasks_finished_total"); err != nil {
		t.Errorf("the metrics after the store broke: %v", err)
	}
	if fed != statusChunk {
		t.Errorf("the store was fed %d events, want its first chunk, %d", fed, statusChunk)
	}
	if n := strings.Count(logged.String(), "the web UI's state store failed"); n != 1 {
		t.Errorf("the store's failure was logged %d times, want once:\n%s", n, logged.String())
	}
}
