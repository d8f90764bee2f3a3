package metrics

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestDynalloc: the hooks dynamic allocation's manager calls land in the
// registry's series.
func TestDynalloc(t *testing.T) {
	r := prometheus.NewRegistry()
	m := NewDynalloc(r)
	m.SetTarget(3)
	m.SetTarget(5)
	m.TargetChanged("up")
	m.TargetChanged("up")
	m.TargetChanged("down")
	m.IdleRemoved()
	want := `
# HELP drover_dynalloc_idle_executors_removed_total Executors removed because they were idle.
# TYPE drover_dynalloc_idle_executors_removed_total counter
drover_dynalloc_idle_executors_removed_total 1
# HELP drover_dynalloc_target_changes_total Changes of the executor target, by direction.
# TYPE drover_dynalloc_target_changes_total counter
drover_dynalloc_target_changes_total{direction="down"} 1
drover_dynalloc_target_changes_total{direction="up"} 2
# HELP drover_dynalloc_target_executors Number of executors dynamic allocation asks for.
# TYPE drover_dynalloc_target_executors gauge
drover_dynalloc_target_executors 5
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	// A direction has no series before its first change.
	fresh := prometheus.NewRegistry()
	NewDynalloc(fresh)
	if diff := cmp.Diff(0, testutil.CollectAndCount(fresh, "drover_dynalloc_target_changes_total")); diff != "" {
		t.Errorf("target-change series before any change (-want +got):\n%s", diff)
	}
}
