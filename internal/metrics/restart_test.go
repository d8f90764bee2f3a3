package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRestart: what the driver's assembly records lands in the restart
// series; a first attempt shows zeros, and a driver without metrics (nil)
// may call the same methods.
func TestRestart(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		record                     func(*Restart)
		restarts, adopted, skipped int
	}{
		{"first attempt", func(*Restart) {}, 0, 0, 0},
		{"attempt 3", func(m *Restart) {
			m.SetRestarts(2)
			m.ExecutorsAdopted(4)
			m.ExecutorsAdopted(1)
			m.StagesSkipped(2)
			m.StagesSkipped(0)
			m.ExecutorsAdopted(-1) // never lowers a counter
		}, 2, 5, 2},
		{"set again", func(m *Restart) {
			m.SetRestarts(1)
			m.SetRestarts(3)
		}, 3, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := prometheus.NewRegistry()
			m := NewRestart(r)
			tc.record(m)
			want := fmt.Sprintf(`
# HELP drover_driver_restarts Times the driver was restarted in its pod before this attempt (spark.kubernetes.driver.restartPolicy=OnFailure): the attempt's container restart count, 0 for the first attempt.
# TYPE drover_driver_restarts gauge
drover_driver_restarts %d
# HELP drover_executors_adopted_total Executors this driver attempt adopted from an earlier attempt instead of creating them.
# TYPE drover_executors_adopted_total counter
drover_executors_adopted_total %d
# HELP drover_stages_skipped_total Shuffle map stages this driver attempt did not run because live executors still held all their outputs from an earlier attempt.
# TYPE drover_stages_skipped_total counter
drover_stages_skipped_total %d
`, tc.restarts, tc.adopted, tc.skipped)
			if err := testutil.GatherAndCompare(r, strings.NewReader(want)); err != nil {
				t.Error(err)
			}
		})
	}
	var none *Restart
	none.SetRestarts(1)
	none.ExecutorsAdopted(1)
	none.StagesSkipped(1)
}

// TestDriverHasRestart: every driver's registry has the restart series.
func TestDriverHasRestart(t *testing.T) {
	d := NewDriver(Options{AppID: "app-1", AppName: "wc"}, false)
	d.Restart.SetRestarts(1)
	for _, name := range []string{"drover_driver_restarts", "drover_executors_adopted_total", "drover_stages_skipped_total"} {
		if n := testutil.CollectAndCount(d.Registry, name); n != 1 {
			t.Errorf("%s: %d series, want 1", name, n)
		}
	}
}
