package allocator

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// step is one round of a scenario: edit the world, run Decide, compare.
type step struct {
	name string
	do   func(w *world)
	want Plan
	// report is a substring the plan's Report must hold; "" wants none.
	report string
}

func runSteps(t *testing.T, w *world, steps []step) {
	t.Helper()
	for i, st := range steps {
		if st.do != nil {
			st.do(w)
		}
		got := w.round()
		if diff := cmp.Diff(st.want, got, cmpopts.EquateEmpty(),
			cmpopts.IgnoreFields(Plan{}, "NextRound", "Report", "Fatal")); diff != "" {
			t.Fatalf("step %d %q: plan (-want +got):\n%s", i+1, st.name, diff)
		}
		if got.Fatal != nil {
			t.Fatalf("step %d %q: unexpected fatal error %v", i+1, st.name, got.Fatal)
		}
		if st.report == "" && got.Report != "" || !strings.Contains(got.Report, st.report) {
			t.Fatalf("step %d %q: report %q, want one holding %q", i+1, st.name, got.Report, st.report)
		}
	}
}

func sparkOptions(batch int) Options {
	return Options{Policy: PolicySpark, BatchSize: batch, BatchDelay: time.Second}
}

func later(d time.Duration, also ...func(w *world)) func(w *world) {
	return func(w *world) {
		w.advance(d)
		for _, f := range also {
			f(w)
		}
	}
}

func TestSparkRampUp(t *testing.T) {
	w := newWorld(t, sparkOptions(2), 5)
	runSteps(t, w, []step{{
		name: "first round requests one batch",
		want: Plan{Create: []executorid.ID{1, 2}, Counts: Counts{Target: 5}},
	}, {
		name: "stale cache: blocked while the batch is unseen",
		do:   later(time.Second),
		want: Plan{Counts: Counts{Target: 5, Unseen: 2}},
	}, {
		name: "one pod seen, one unseen: still blocked",
		do:   later(time.Second, func(w *world) { w.appear(snapshot.Pending, ids(1, 1)) }),
		want: Plan{Counts: Counts{Target: 5, Pending: 1, Unseen: 1}},
	}, {
		name: "whole batch seen: next batch",
		do:   later(time.Second, func(w *world) { w.appear(snapshot.Pending, ids(2, 2)) }),
		want: Plan{Create: []executorid.ID{3, 4}, Counts: Counts{Target: 5, Pending: 2}},
	}, {
		name: "registered before seen: does not block, still counts",
		do: later(time.Second, func(w *world) {
			w.registered[3], w.registered[4] = true, true
		}),
		want: Plan{Create: []executorid.ID{5}, Counts: Counts{Target: 5, Pending: 2, UnseenKnown: 2}},
	}, {
		name: "target reached",
		do: later(time.Second, func(w *world) {
			w.appear(snapshot.Running, ids(3, 4))
			w.appear(snapshot.Pending, ids(5, 5))
		}),
		want: Plan{Counts: Counts{Target: 5, Running: 2, Pending: 3}},
	}, {
		name: "a failed pod no longer counts and is replaced",
		do:   later(time.Second, func(w *world) { w.appear(snapshot.Failed, ids(1, 1)) }),
		want: Plan{Create: []executorid.ID{6}, Counts: Counts{Target: 5, Running: 2, Pending: 2}},
	}, {
		// Spark does not count a pod in an unknown phase and replaces it;
		// if its node comes back, that is one executor too many.
		name: "an unknown pod still counts, unlike Spark: it may come back",
		do: later(time.Second, func(w *world) {
			w.appear(snapshot.Pending, ids(6, 6))
			w.appear(snapshot.Unknown, ids(2, 2))
		}),
		want: Plan{Counts: Counts{Target: 5, Running: 2, Pending: 3}},
	}})
}

func TestSparkCreationTimeout(t *testing.T) {
	o := sparkOptions(2)
	o.PodCreationTimeout = 10 * time.Second
	w := newWorld(t, o, 2)
	runSteps(t, w, []step{{
		name: "batch",
		want: Plan{Create: []executorid.ID{1, 2}, Counts: Counts{Target: 2}},
	}, {
		name: "at the timeout the unseen pod still blocks",
		do:   later(10*time.Second, func(w *world) { w.appear(snapshot.Pending, ids(1, 1)) }),
		want: Plan{Counts: Counts{Target: 2, Pending: 1, Unseen: 1}},
	}, {
		name: "past it: forgotten, deleted and replaced in the same round",
		do:   later(time.Millisecond),
		want: Plan{DeleteLost: []executorid.ID{2}, Create: []executorid.ID{3}, Counts: Counts{Target: 2, Pending: 1}},
	}, {
		name: "the lost pod surfacing late is not counted",
		do:   later(time.Second, func(w *world) { w.appear(snapshot.Pending, ids(2, 2)) }),
		want: Plan{Counts: Counts{Target: 2, Pending: 1, Unseen: 1}},
	}})
	if !w.s.IsDeleted(2) {
		t.Errorf("IsDeleted(2) = false, want true")
	}
}

func TestSparkMaxPendingPods(t *testing.T) {
	o := sparkOptions(5)
	o.MaxPendingPods = 3
	w := newWorld(t, o, 10)
	runSteps(t, w, []step{{
		name: "capped by maxPendingPods",
		want: Plan{Create: []executorid.ID{1, 2, 3}, Counts: Counts{Target: 10}},
	}, {
		name: "all pending: no room",
		do:   later(time.Second, func(w *world) { w.appear(snapshot.Pending, ids(1, 3)) }),
		want: Plan{Counts: Counts{Target: 10, Pending: 3}},
	}, {
		name: "one runs: one slot",
		do:   later(time.Second, func(w *world) { w.appear(snapshot.Running, ids(1, 1)) }),
		want: Plan{Create: []executorid.ID{4}, Counts: Counts{Target: 10, Running: 1, Pending: 2}},
	}, {
		name: "registered pending pods still take slots",
		do: later(time.Second, func(w *world) {
			w.appear(snapshot.Pending, ids(4, 4))
			w.appear(snapshot.Running, ids(2, 2))
			w.registered[3] = true
		}),
		want: Plan{Create: []executorid.ID{5}, Counts: Counts{Target: 10, Running: 2, Pending: 1, PendingKnown: 1}},
	}})
}

func TestSparkDownscale(t *testing.T) {
	o := sparkOptions(10)
	o.ExecutorIdleTimeout = 60 * time.Second
	w := newWorld(t, o, 6)
	runSteps(t, w, []step{{
		name: "batch",
		want: Plan{Create: ids(1, 6), Counts: Counts{Target: 6}},
	}, {
		name: "some run, some pend, some unseen",
		do: later(time.Second, func(w *world) {
			w.appear(snapshot.Running, ids(1, 2))
			w.set(execPod(3, snapshot.Pending, createdAt(t0)), execPod(4, snapshot.Pending, createdAt(t0)))
			w.registered[4] = true
		}),
		want: Plan{Counts: Counts{Target: 6, Running: 2, Pending: 1, PendingKnown: 1, Unseen: 2}},
	}, {
		name: "target drops: nothing is old enough to delete",
		do: func(w *world) {
			w.now = t0.Add(30 * time.Second)
			w.target = 1
			w.set(execPod(5, snapshot.Pending, createdAt(w.now)))
		},
		want: Plan{Counts: Counts{Target: 1, Running: 2, Pending: 2, PendingKnown: 1, Unseen: 1}},
	}, {
		name: "past the idle timeout: old unseen first, then old unregistered pending; never running or registered",
		do:   func(w *world) { w.now = t0.Add(61 * time.Second) },
		// The unseen one in any phase: its pod may land after the delete.
		want: Plan{DeleteUnseen: []executorid.ID{6}, DeleteExcess: []executorid.ID{3}, Counts: Counts{Target: 1, Running: 2, Pending: 1, PendingKnown: 1}},
	}, {
		name: "the cache still shows the deleted pod: not counted",
		do:   later(time.Second),
		want: Plan{Counts: Counts{Target: 1, Running: 2, Pending: 1, PendingKnown: 1}},
	}, {
		// And pod 3, still pending without a deletion 30 s after its
		// delete was answered, missed it (it landed later): deleted again.
		name: "the young pending pod ages out too",
		do:   func(w *world) { w.now = t0.Add(91 * time.Second) },
		want: Plan{DeleteExcess: []executorid.ID{3, 5}, Counts: Counts{Target: 1, Running: 2, PendingKnown: 1}},
	}})
	for id, want := range map[executorid.ID]bool{1: false, 3: true, 4: false, 5: true, 6: true} {
		if got := w.s.IsDeleted(id); got != want {
			t.Errorf("IsDeleted(%d) = %v, want %v", id, got, want)
		}
	}
}

func TestSparkAllocationMaximum(t *testing.T) {
	o := sparkOptions(5)
	o.AllocationMaximum = 4
	w := newWorld(t, o, 5)
	runSteps(t, w, []step{{
		name:   "ids stop below the maximum",
		want:   Plan{Create: []executorid.ID{1, 2, 3}, Limit: Limit{Held: 2, Reachable: 3, Cause: "spark.kubernetes.allocation.maximum=4"}, Counts: Counts{Target: 5}},
		report: "Exceed the pod creation limit: 4",
	}, {
		name: "reported once",
		do:   later(time.Second, func(w *world) { w.appear(snapshot.Running, ids(1, 3)) }),
		want: Plan{Limit: Limit{Held: 2, Reachable: 3, Cause: "spark.kubernetes.allocation.maximum=4"}, Counts: Counts{Target: 5, Running: 3}},
	}, {
		name: "replacements are refused too: the limit counts ids issued",
		do:   later(time.Second, func(w *world) { w.appear(snapshot.Failed, ids(1, 1)) }),
		want: Plan{Limit: Limit{Held: 3, Reachable: 2, Cause: "spark.kubernetes.allocation.maximum=4"}, Counts: Counts{Target: 5, Running: 2}},
	}})
}

func TestSparkSerialCreateFailure(t *testing.T) {
	w := newWorld(t, sparkOptions(5), 5)
	w.createErr = func(id executorid.ID) error {
		if id == 2 {
			return errRefused
		}
		return nil
	}
	runSteps(t, w, []step{{
		name: "batch",
		want: Plan{Create: ids(1, 5), Counts: Counts{Target: 5}},
	}, {
		name: "only the created pod is expected; it blocks the profile",
		do: later(time.Second, func(w *world) {
			w.createErr = nil
		}),
		want:   Plan{Counts: Counts{Target: 5, Unseen: 1}},
		report: "retrying in the next round",
	}, {
		name: "the refused id and those skipped after it are issued again: no id is burned",
		do:   later(time.Second, func(w *world) { w.appear(snapshot.Pending, ids(1, 1)) }),
		want: Plan{Create: ids(2, 5), Counts: Counts{Target: 5, Pending: 1}},
	}})
}
