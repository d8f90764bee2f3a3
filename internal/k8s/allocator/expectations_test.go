package allocator

import (
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

var policies = []Policy{PolicyAdaptive, PolicySpark}

func TestStaleCacheNeverDoubleCreates(t *testing.T) {
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) {
			w := newWorld(t, Options{Policy: policy, BatchSize: 20, BatchDelay: time.Second, MaxPendingPods: 1000}, 30)
			var created, lagging []executorid.ID
			for r := range 40 {
				if r >= 20 {
					// The cache catches up, one round late.
					w.appear(snapshot.Running, lagging)
				}
				lagging = append([]executorid.ID(nil), created...)
				p := w.round()
				created = append(created, p.Create...)
				if len(created) > w.target {
					t.Fatalf("round %d: %d executors requested, target %d", r+1, len(created), w.target)
				}
				w.advance(time.Second)
			}
			if len(created) != w.target {
				t.Errorf("%d executors requested, want %d", len(created), w.target)
			}
		})
	}
}

func TestLostCreationIsForgotten(t *testing.T) {
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) {
			o := Options{Policy: policy, BatchSize: 2, BatchDelay: time.Second, PodCreationTimeout: 30 * time.Second}
			w := newWorld(t, o, 2)
			runSteps(t, w, []step{{
				name: "batch",
				want: Plan{Create: ids(1, 2), Counts: Counts{Target: 2}},
			}, {
				name: "one pod seen, one never",
				do:   later(30*time.Second, func(w *world) { w.appear(snapshot.Running, ids(1, 1)) }),
				want: Plan{Counts: Counts{Target: 2, Running: 1, Unseen: 1}},
			}, {
				name: "past the timeout: deleted, not counted, replaced",
				do:   later(time.Millisecond),
				want: Plan{DeleteLost: []executorid.ID{2}, Create: []executorid.ID{3}, Counts: Counts{Target: 2, Running: 1}},
			}})
		})
	}
}

func TestSeenBetweenRounds(t *testing.T) {
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) {
			w := newWorld(t, Options{Policy: policy, BatchSize: 2, BatchDelay: time.Second}, 2)
			runSteps(t, w, []step{{
				name: "batch",
				want: Plan{Create: ids(1, 2), Counts: Counts{Target: 2}},
			}, {
				name: "both pods came and went between two rounds: replaced, not awaited",
				do:   later(time.Second, func(w *world) { w.seen[1], w.seen[2] = true, true }),
				want: Plan{Create: ids(3, 4), Counts: Counts{Target: 2}},
			}})
		})
	}
}

// An executor that registered before its pod was seen, then ended before it
// ever was, must not be counted forever (SPARK-44609).
func TestRegisteredThenGone(t *testing.T) {
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) {
			w := newWorld(t, Options{Policy: policy, BatchSize: 2, BatchDelay: time.Second}, 2)
			runSteps(t, w, []step{{
				name: "batch",
				want: Plan{Create: ids(1, 2), Counts: Counts{Target: 2}},
			}, {
				name: "both register before their pods are seen",
				do:   later(time.Second, func(w *world) { w.registered[1], w.registered[2] = true, true }),
				want: Plan{Counts: Counts{Target: 2, UnseenKnown: 2}},
			}, {
				name: "one is removed, its pod never seen: replaced",
				do:   later(time.Second, func(w *world) { delete(w.registered, 1) }),
				want: Plan{Create: []executorid.ID{3}, Counts: Counts{Target: 2, UnseenKnown: 1}},
			}})
		})
	}
}

func TestFailedDeleteIsRetried(t *testing.T) {
	o := Options{Policy: PolicySpark, BatchSize: 1, BatchDelay: time.Second, PodCreationTimeout: 10 * time.Second}
	w := newWorld(t, o, 1)
	w.deleteErr = apierrors.NewInternalError(errBoom)
	runSteps(t, w, []step{{
		name: "batch",
		want: Plan{Create: ids(1, 1), Counts: Counts{Target: 1}},
	}, {
		name: "lost: delete, which fails",
		do:   later(11*time.Second, func(w *world) { w.appear(snapshot.Running, ids(2, 2)) }),
		want: Plan{DeleteLost: []executorid.ID{1}, Counts: Counts{Target: 1, Running: 1}},
	}, {
		name: "retried",
		do:   later(time.Second, func(w *world) { w.deleteErr = nil }),
		want: Plan{DeleteLost: []executorid.ID{1}, Counts: Counts{Target: 1, Running: 1}},
	}, {
		name: "done",
		do:   later(time.Second),
		want: Plan{Counts: Counts{Target: 1, Running: 1}},
	}})
	if !w.s.IsDeleted(1) {
		t.Errorf("IsDeleted(1) = false right after the deletion")
	}
	w.advance(11 * time.Second)
	w.round()
	if w.s.IsDeleted(1) {
		t.Errorf("IsDeleted(1) = true after PodCreationTimeout with no pod: the deletion is never forgotten")
	}
}

func TestDeletedPodsDoNotCount(t *testing.T) {
	o := Options{Policy: PolicyAdaptive, BatchSize: 3, BatchDelay: time.Second, ExecutorIdleTimeout: time.Second}
	w := newWorld(t, o, 3)
	runSteps(t, w, []step{{
		name: "batch",
		want: Plan{Create: ids(1, 3), Counts: Counts{Target: 3}},
	}, {
		name: "downscale deletes old pending pods",
		do: later(2*time.Second, func(w *world) {
			w.set(execPod(1, snapshot.Pending), execPod(2, snapshot.Pending), execPod(3, snapshot.Pending))
			w.target = 1
		}),
		want: Plan{DeleteExcess: ids(1, 2), Counts: Counts{Target: 1, Pending: 1}},
	}, {
		name: "upscale while the cache still shows them: they do not count",
		do:   later(time.Second, func(w *world) { w.target = 3 }),
		want: Plan{Create: ids(4, 5), Counts: Counts{Target: 3, Pending: 1}},
	}})
	for id, want := range map[executorid.ID]bool{1: true, 2: true, 3: false, 4: false} {
		if got := w.s.IsDeleted(id); got != want {
			t.Errorf("IsDeleted(%d) = %v, want %v", id, got, want)
		}
	}
}

// TestExcessDeleteThatMissedItsPod: an excess delete takes only Pending
// pods. A pod that started before the delete reached it stays, and counts
// again, so a higher target later creates only what is missing; and a pod
// in an unknown phase, which such a delete would not take, is not chosen.
func TestExcessDeleteThatMissedItsPod(t *testing.T) {
	t.Run("started first", func(t *testing.T) {
		w := newWorld(t, adaptiveOptions(5, 5), 2)
		runSteps(t, w, []step{{
			name: "two pods",
			want: Plan{Create: ids(1, 2), Counts: Counts{Target: 2}},
		}, {
			name: "both pending",
			do:   later(time.Second, func(w *world) { w.appear(snapshot.Pending, ids(1, 2), createdAt(t0)) }),
			want: Plan{Counts: Counts{Target: 2, Pending: 2}},
		}, {
			name: "the target drops past the idle timeout: the oldest pending pod is deleted",
			do:   later(time.Minute, func(w *world) { w.target = 1 }),
			want: Plan{DeleteExcess: []executorid.ID{1}, Counts: Counts{Target: 1, Pending: 1}},
		}, {
			name: "it had started: it stays and counts, the other goes",
			do: later(time.Second, func(w *world) {
				w.set(execPod(1, snapshot.Running))
				w.registered[1] = true
			}),
			want: Plan{DeleteExcess: []executorid.ID{2}, Spared: []executorid.ID{1}, Counts: Counts{Target: 1, Running: 1}},
		}, {
			name: "the target is back: one pod more, not two",
			do: later(time.Second, func(w *world) {
				delete(w.pods, 2)
				w.target = 2
			}),
			want: Plan{Create: []executorid.ID{3}, Counts: Counts{Target: 2, Running: 1}},
		}})
	})
	t.Run("unknown phase", func(t *testing.T) {
		w := newWorld(t, adaptiveOptions(5, 5), 2)
		runSteps(t, w, []step{{
			name: "two pods",
			want: Plan{Create: ids(1, 2), Counts: Counts{Target: 2}},
		}, {
			name: "one pending, one in an unknown phase",
			do: later(time.Second, func(w *world) {
				w.appear(snapshot.Unknown, ids(1, 1), createdAt(t0))
				w.appear(snapshot.Pending, ids(2, 2), createdAt(t0))
			}),
			want: Plan{Counts: Counts{Target: 2, Pending: 2}},
		}, {
			name: "the target drops: the pending one is deleted",
			do:   later(time.Minute, func(w *world) { w.target = 1 }),
			want: Plan{DeleteExcess: []executorid.ID{2}, Counts: Counts{Target: 1, Pending: 1}},
		}})
	})
}

// TestCreateInDoubtWhenTheTargetDrops: a create whose outcome is unknown is
// sent again while the target wants it; once the target drops below what
// exists and is in doubt, it is deleted in any phase (the pod may exist, or
// land later) and never sent again, where its resends went on and created a
// pod for a target of 0. A pod that lands after that delete is deleted
// again, not counted.
func TestCreateInDoubtWhenTheTargetDrops(t *testing.T) {
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) {
			w := newWorld(t, Options{Policy: policy, BatchSize: 5, BatchDelay: time.Second, MaxPendingPods: 5}, 1)
			w.createErr = func(executorid.ID) error { return errReset }
			if p := w.round(); !slices.Equal(p.Create, ids(1, 1)) {
				t.Fatalf("first round created %v, want [1]", p.Create)
			}
			resent := false
			for range 30 {
				w.advance(time.Second)
				if p := w.round(); p.Resend > 0 {
					resent = true
					break
				}
			}
			if !resent {
				t.Fatal("the create in doubt was never sent again")
			}
			w.target = 0
			w.advance(time.Second)
			p := w.round()
			if !slices.Equal(p.DeleteUnseen, ids(1, 1)) || len(p.Create) > 0 {
				t.Errorf("after the target dropped to 0: delete %v, create %v; want delete [1] in any phase, no create", p.DeleteUnseen, p.Create)
			}
			w.createErr = nil
			// The last resend lands after the delete: the pod shows up,
			// pending, then running.
			var redeleted []executorid.ID
			for r := range 30 {
				w.advance(time.Second)
				if r == 2 {
					w.appear(snapshot.Pending, ids(1, 1))
				}
				if r == 5 {
					w.set(execPod(1, snapshot.Running))
				}
				p := w.round()
				if len(p.Create) > 0 {
					t.Fatalf("created %v for a target of 0", p.Create)
				}
				if p.Counts.Total() > 0 {
					t.Fatalf("round %d counts %+v for a target of 0", r, p.Counts)
				}
				redeleted = append(redeleted, p.DeleteLost...)
			}
			if !slices.Contains(redeleted, 1) {
				t.Error("the pod that landed after its delete was never deleted again")
			}
		})
	}
}
