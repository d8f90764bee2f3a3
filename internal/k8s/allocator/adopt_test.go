package allocator

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// TestRestartedDriverAdoptsThePodsThatExist: a driver restarted in its pod
// finds its earlier attempt's executor pods in the first snapshot. They
// count toward the target, their executors are issued (they may register),
// and new ids continue above the highest: nothing is created in their
// place or under their names.
func TestRestartedDriverAdoptsThePodsThatExist(t *testing.T) {
	for _, policy := range []Policy{PolicyAdaptive, PolicySpark} {
		t.Run(string(policy), func(t *testing.T) {
			w := newWorld(t, Options{Policy: policy, BatchSize: 5}, 4)
			// Executors 1 and 3 to 5 live; 2 ended before the restart.
			w.appear(snapshot.Running, []executorid.ID{1, 3, 4})
			w.appear(snapshot.Pending, []executorid.ID{5})
			if p := w.round(); len(p.Create) != 0 {
				t.Fatalf("created %v beside the 4 pods the earlier attempt left", p.Create)
			}
			for _, id := range []executorid.ID{1, 3, 4, 5} {
				if !w.s.Issued(id) {
					t.Errorf("executor %d of the earlier attempt is not issued: its registration would be refused", id)
				}
			}
			w.target = 6
			w.now = w.now.Add(w.o.withDefaults().BatchDelay)
			if diff := cmp.Diff([]executorid.ID{6, 7}, w.round().Create); diff != "" {
				t.Errorf("creates after the target grew to 6 (-want +got):\n%s", diff)
			}
		})
	}
}
