package allocator

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

var errBoom = errors.New("boom")

// errRefused is a create the API server refused: nothing was stored.
var errRefused = apierrors.NewTooManyRequests("slow down", 1)

var podsResource = schema.GroupResource{Resource: "pods"}

func quotaErr(id executorid.ID) error {
	return apierrors.NewForbidden(podsResource, execPod(id, snapshot.Pending).Pod.Name,
		errors.New("exceeded quota: compute, requested: cpu=1, used: cpu=3, limited: cpu=3"))
}

func adaptiveOptions(batch, maxPending int) Options {
	return Options{Policy: PolicyAdaptive, BatchSize: batch, BatchDelay: time.Second, MaxPendingPods: maxPending}
}

// rampSizes runs rounds until the target is requested and returns the size
// of each creating round; between rounds, admit shows the last round's pods.
func rampSizes(t *testing.T, w *world, admit func(w *world)) []int {
	t.Helper()
	var sizes []int
	total := 0
	for range 50 {
		p := w.round()
		if len(p.Create) > 0 {
			sizes = append(sizes, len(p.Create))
			total += len(p.Create)
		}
		if total > w.target {
			t.Fatalf("requested %d executors, target %d", total, w.target)
		}
		if total == w.target {
			break
		}
		admit(w)
		w.advance(time.Second)
	}
	return sizes
}

func TestAdaptiveRounds(t *testing.T) {
	tests := map[string]struct {
		o     Options
		admit func(w *world)
		want  []int
	}{
		"rounds double while observed and scheduled, capped by the need": {
			o:     adaptiveOptions(20, 100000),
			admit: func(w *world) { w.appearLast(snapshot.Pending, onNode) },
			want:  []int{20, 40, 80, 160, 320, 380},
		},
		"the default pending cap follows the running executors": {
			o:     adaptiveOptions(20, 0),
			admit: func(w *world) { w.appearLast(snapshot.Running) },
			want:  []int{20, 20, 40, 80, 160, 320, 360},
		},
		"observed but not scheduled: no doubling": {
			o:     adaptiveOptions(20, 100000),
			admit: func(w *world) { w.appearLast(snapshot.Pending) },
			want:  slices.Repeat([]int{20}, 50),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.o, 1000)
			if diff := cmp.Diff(tc.want, rampSizes(t, w, tc.admit)); diff != "" {
				t.Errorf("round sizes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdaptiveNoDoublingWhileUnobserved(t *testing.T) {
	w := newWorld(t, adaptiveOptions(20, 100000), 1000)
	var sizes []int
	round := func() { sizes = append(sizes, len(w.round().Create)); w.advance(time.Second) }
	round() // 1..20
	round() // stale cache: the first round is unobserved
	w.appear(snapshot.Pending, ids(1, 40))
	round() // observed, but not scheduled
	w.appear(snapshot.Pending, ids(1, 60), onNode)
	round() // observed and scheduled
	if diff := cmp.Diff([]int{20, 20, 20, 40}, sizes); diff != "" {
		t.Errorf("round sizes (-want +got):\n%s", diff)
	}
}

func TestAdaptivePendingCap(t *testing.T) {
	tests := map[string]struct {
		o       Options
		running []executorid.ID
		pending []executorid.ID
		known   []executorid.ID
		want    []executorid.ID
	}{
		"max(batch, running) minus pending": {
			o: adaptiveOptions(10, 0), running: ids(1, 30), pending: ids(31, 55),
			want: ids(56, 60),
		},
		"batch size is the floor": {
			o: adaptiveOptions(10, 0), running: ids(1, 3),
			want: ids(56, 65),
		},
		"an explicit maxPendingPods wins": {
			o: adaptiveOptions(10, 50), running: ids(1, 30), pending: ids(31, 55),
			want: ids(56, 80),
		},
		"registered executors count as running, whatever the cache says": {
			o: adaptiveOptions(10, 0), running: ids(1, 10), known: ids(11, 30),
			want: ids(56, 85),
		},
		"full": {
			o: adaptiveOptions(10, 0), running: ids(1, 20), pending: ids(21, 40),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.o, 100)
			w.s.lastID, w.s.round = 55, 40
			w.appear(snapshot.Running, tc.running)
			w.appear(snapshot.Pending, tc.pending)
			w.appear(snapshot.Pending, tc.known)
			for _, id := range tc.known {
				w.registered[id] = true
			}
			if diff := cmp.Diff(tc.want, w.round().Create); diff != "" {
				t.Errorf("created (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdaptiveHalvesOnUnschedulable(t *testing.T) {
	w := newWorld(t, adaptiveOptions(20, 100000), 1000)
	var sizes []int
	round := func() { sizes = append(sizes, len(w.round().Create)); w.advance(time.Second) }
	round() // 1..20
	w.appear(snapshot.Pending, ids(1, 15), onNode)
	w.appear(snapshot.Pending, ids(16, 20), unschedulableCond)
	round() // 21..30: halved
	w.appear(snapshot.Pending, ids(21, 30), onNode)
	round() // 31..40: no doubling while pods are unschedulable
	w.appear(snapshot.Pending, ids(31, 40), unschedulableCond)
	round() // 41..45: halved again on fresh ones
	w.appear(snapshot.Pending, ids(16, 45), onNode)
	round() // all scheduled: doubles
	if diff := cmp.Diff([]int{20, 10, 10, 5, 10}, sizes); diff != "" {
		t.Errorf("round sizes (-want +got):\n%s", diff)
	}
}

func TestAdaptiveBackoff(t *testing.T) {
	w := newWorld(t, adaptiveOptions(16, 100000), 1000)
	failing := func(executorid.ID) error { return errRefused }
	w.createErr = failing
	type want struct {
		create int
		next   time.Duration
	}
	var got []want
	round := func(d time.Duration) {
		w.advance(d)
		p := w.round()
		got = append(got, want{len(p.Create), p.NextRound})
	}
	round(0)           // 16, the first fails
	round(time.Second) // halved to 8, back off 1s
	round(time.Second)
	round(time.Second) // 4, back off 2s
	round(2 * time.Second)
	round(time.Second)     // 2, back off 4s
	round(3 * time.Second) // woken early: still waits
	round(time.Second)
	round(time.Second) // 1, back off 8s
	round(8 * time.Second)
	round(time.Second) // 16s
	round(16 * time.Second)
	round(time.Second) // 30s, not 32s
	w.createErr = nil
	round(30 * time.Second) // succeeds
	w.createErr = failing
	round(time.Second) // success reset the back-off: creates at once, fails
	round(time.Second) // back off 1s, not 60s
	round(time.Second)
	s := time.Second
	if diff := cmp.Diff([]want{
		{16, s}, {0, s}, {8, s}, {0, 2 * s}, {4, s}, {0, 4 * s}, {0, s}, {2, s}, {0, 8 * s}, {1, s}, {0, 16 * s},
		{1, s}, {0, 30 * s}, {1, s}, {1, s}, {0, s}, {1, s},
	}, got, cmp.AllowUnexported(want{})); diff != "" {
		t.Errorf("rounds (-want +got):\n%s", diff)
	}
}

func TestAdaptiveHalvesOnPartialFailure(t *testing.T) {
	w := newWorld(t, adaptiveOptions(20, 100000), 1000)
	w.createErr = func(id executorid.ID) error {
		if id == 5 {
			return apierrors.NewTimeoutError("slow", 1)
		}
		return nil
	}
	w.round()
	w.advance(time.Second)
	w.createErr = nil
	p := w.round()
	// 1..4 created, 5 timed out (it may exist: sent again with the same
	// name), 6..20 given back: halved, no back-off.
	if diff := cmp.Diff(ids(5, 15), p.Create); diff != "" || p.Resend != 1 {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	if !strings.Contains(p.Report, "(1 failed); retrying in 1s") {
		t.Errorf("report %q, want the failure", p.Report)
	}
}

func TestQuota(t *testing.T) {
	for _, policy := range []Policy{PolicyAdaptive, PolicySpark} {
		t.Run(string(policy), func(t *testing.T) {
			w := newWorld(t, Options{Policy: policy, BatchSize: 10, BatchDelay: time.Second}, 10)
			w.createErr = func(id executorid.ID) error {
				if id >= 4 {
					return quotaErr(id)
				}
				return nil
			}
			runSteps(t, w, []step{{
				name: "first round hits the quota after 3 pods",
				want: Plan{Create: ids(1, 10), Counts: Counts{Target: 10}},
			}, {
				name:   "reported, and no retry",
				do:     later(time.Second),
				want:   Plan{Limit: Limit{Held: 7, Reachable: 3, Cause: "ResourceQuota compute"}, Counts: Counts{Target: 10, Unseen: 3}},
				report: "exceeded quota: compute, requested: cpu=1, used: cpu=3, limited: cpu=3; continuing with 3 of 10 executors",
			}, {
				name: "still blocked, reported once",
				do:   later(time.Second, func(w *world) { w.appear(snapshot.Running, ids(1, 3)) }),
				want: Plan{Limit: Limit{Held: 7, Reachable: 3, Cause: "ResourceQuota compute"}, Counts: Counts{Target: 10, Running: 3}},
			}, {
				name: "still blocked many rounds later",
				do:   later(QuotaRetry - 3*time.Second),
				want: Plan{Limit: Limit{Held: 7, Reachable: 3, Cause: "ResourceQuota compute"}, Counts: Counts{Target: 10, Running: 3}},
			}, {
				name: "QuotaRetry after the refusal: one create probes it (the quota may have room now), the limit stands",
				do:   later(2 * time.Second),
				want: Plan{Create: ids(4, 4), Limit: Limit{Held: 7, Reachable: 3, Cause: "ResourceQuota compute"}, Counts: Counts{Target: 10, Running: 3}},
			}, {
				name: "refused again: blocked, not reported again",
				do:   later(time.Second),
				want: Plan{Limit: Limit{Held: 7, Reachable: 3, Cause: "ResourceQuota compute"}, Counts: Counts{Target: 10, Running: 3}},
			}, {
				name: "a pod ends: try again",
				do:   later(time.Second, func(w *world) { w.appear(snapshot.Failed, ids(2, 2)) }),
				// Adaptive's round was halved by the second refusal.
				want: Plan{Create: ids(4, map[Policy]executorid.ID{PolicyAdaptive: 5, PolicySpark: 11}[policy]), Counts: Counts{Target: 10, Running: 2}},
			}, {
				name: "quota again: blocked, not reported again",
				do:   later(time.Second),
				want: Plan{Limit: Limit{Held: 8, Reachable: 2, Cause: "ResourceQuota compute"}, Counts: Counts{Target: 10, Running: 2}},
			}, {
				name: "the target changes: try again",
				do:   later(time.Second, func(w *world) { w.target = 12 }),
				want: Plan{Create: ids(4, map[Policy]executorid.ID{PolicyAdaptive: 4, PolicySpark: 13}[policy]),
					Counts: Counts{Target: 12, Running: 2}},
			}})
		})
	}
}

func TestFatalCreateErrors(t *testing.T) {
	forbidden := apierrors.NewForbidden(podsResource, "app-exec-1",
		errors.New(`User "system:serviceaccount:default:driver" cannot create resource "pods"`))
	tests := map[string]struct {
		err       error
		wantFatal string // substring of the fatal error; "" for none
	}{
		"invalid spec": {
			err:       invalidPodErr(),
			wantFatal: `creating executor pod for executor 1: Pod "app-exec-1" is invalid: spec.containers[0].image: Required value`,
		},
		"forbidden":             {err: forbidden, wantFatal: `cannot create resource "pods"`},
		"bad request":           {err: apierrors.NewBadRequest("no kind is registered"), wantFatal: "no kind is registered"},
		"wrapped invalid":       {err: wrap(invalidPodErr()), wantFatal: "Required value"},
		"quota is not fatal":    {err: quotaErr(1)},
		"server error":          {err: apierrors.NewInternalError(errBoom)},
		"throttled":             {err: apierrors.NewTooManyRequests("slow down", 1)},
		"namespace terminating": {err: namespaceTerminatingErr()},
		"already exists":        {err: apierrors.NewAlreadyExists(podsResource, "app-exec-1")},
	}
	for name, tc := range tests {
		for _, policy := range []Policy{PolicyAdaptive, PolicySpark} {
			t.Run(name+"/"+string(policy), func(t *testing.T) {
				w := newWorld(t, Options{Policy: policy, BatchSize: 3, BatchDelay: time.Second}, 3)
				w.createErr = func(id executorid.ID) error {
					if id == 1 {
						return tc.err
					}
					return nil
				}
				w.round()
				w.createErr = nil
				for range 2 { // and it stays fatal
					w.advance(time.Second)
					p := w.round()
					if tc.wantFatal == "" {
						if p.Fatal != nil {
							t.Fatalf("fatal error %v, want none", p.Fatal)
						}
						return
					}
					var fe *FatalError
					if !errors.As(p.Fatal, &fe) || fe.ID != 1 || !IsFatal(p.Fatal) {
						t.Fatalf("fatal error %#v, want a *FatalError for executor 1", p.Fatal)
					}
					if !strings.Contains(p.Fatal.Error(), tc.wantFatal) {
						t.Errorf("fatal error %q, want it to hold %q", p.Fatal, tc.wantFatal)
					}
					if len(p.Create)+len(p.DeleteExcess)+len(p.DeleteUnseen)+len(p.DeleteLost) > 0 {
						t.Errorf("fatal plan still acts: %+v", p)
					}
				}
			})
		}
	}
}

// FirstRound lets a small application have all its pods at once while the
// cluster takes them; a large one ramps up from it.
func TestAdaptiveFirstRound(t *testing.T) {
	running := func(w *world) { w.appearLast(snapshot.Running) }
	tests := map[string]struct {
		first, target int
		want          []int
	}{
		"a small application in one round":   {first: 100, target: 100, want: []int{100}},
		"fewer than the first round":         {first: 100, target: 30, want: []int{30}},
		"a large one ramps up from it":       {first: 100, target: 1000, want: []int{100, 100, 200, 400, 200}},
		"unset: the batch size, as before":   {first: 0, target: 100, want: []int{20, 20, 40, 20}},
		"below the batch size: the batch":    {first: 5, target: 100, want: []int{20, 20, 40, 20}},
		"the batch size: the ramp as before": {first: 20, target: 1000, want: []int{20, 20, 40, 80, 160, 320, 360}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := adaptiveOptions(20, 0)
			o.FirstRound = tc.first
			w := newWorld(t, o, tc.target)
			if diff := cmp.Diff(tc.want, rampSizes(t, w, running)); diff != "" {
				t.Errorf("round sizes (-want +got):\n%s", diff)
			}
		})
	}
}

// A cluster that does not start pods gets no more than the first round,
// whatever says no: the scheduler, a queue; the quota stops it at once. Once it has pushed
// back, every later ramp starts from the batch size, as before FirstRound.
func TestAdaptiveFirstRoundPushback(t *testing.T) {
	tests := map[string]struct {
		// hold shows the pods of a round the cluster does not start.
		hold func(w *world, created []executorid.ID)
		// createErr, if set, is every create's outcome.
		createErr func(id executorid.ID) error
		// wantCreated is how many pods exist after a minute.
		wantCreated int
	}{
		"unschedulable": {
			hold:        func(w *world, created []executorid.ID) { w.appear(snapshot.Pending, created, unschedulableCond) },
			wantCreated: 100,
		},
		"held by a queue": {
			hold:        func(w *world, created []executorid.ID) { w.appear(snapshot.Gated, created, gatedByKueue("team-a")) },
			wantCreated: 100,
		},
		"quota after 3 pods": {
			hold: func(w *world, created []executorid.ID) { w.appear(snapshot.Running, created) },
			createErr: func(id executorid.ID) error {
				if id > 3 {
					return quotaErr(id)
				}
				return nil
			},
			wantCreated: 3,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := adaptiveOptions(20, 0)
			o.FirstRound = 100
			w := newWorld(t, o, 1000)
			w.createErr = tc.createErr
			var created []executorid.ID
			for range 60 {
				p := w.round()
				for _, cr := range w.creates {
					if cr.Err == nil {
						created = append(created, cr.ID)
					}
				}
				tc.hold(w, created)
				if p.Fatal != nil {
					t.Fatal(p.Fatal)
				}
				w.advance(time.Second)
			}
			if len(created) != tc.wantCreated {
				t.Fatalf("%d pods created in a minute of a cluster that takes no more, want %d", len(created), tc.wantCreated)
			}
			// The cluster frees up: all pods run, the target is reached
			// and then raised; the new ramp starts from the batch size.
			w.createErr = nil
			w.pods = map[executorid.ID]snapshot.ExecutorPod{}
			w.target = len(created)
			w.appear(snapshot.Running, created)
			if p := w.round(); len(p.Create) != 0 {
				t.Fatalf("created %d at the target", len(p.Create))
			}
			w.target += 100
			w.advance(time.Second)
			if got := len(w.round().Create); got != 20 {
				t.Errorf("the next ramp's first round created %d, want the batch size, 20", got)
			}
		})
	}
}

// Without pushback, a later ramp (a raised target) starts from FirstRound
// again.
func TestAdaptiveFirstRoundAfterTarget(t *testing.T) {
	o := adaptiveOptions(20, 0)
	o.FirstRound = 50
	w := newWorld(t, o, 50)
	var sizes []int
	for _, target := range []int{50, 50, 100, 100} {
		w.target = target
		p := w.round()
		sizes = append(sizes, len(p.Create))
		w.appearLast(snapshot.Running)
		w.advance(time.Second)
	}
	if diff := cmp.Diff([]int{50, 0, 50, 0}, sizes); diff != "" {
		t.Errorf("round sizes (-want +got):\n%s", diff)
	}
}

// TestQuotaFreedElsewhere: a quota that others free (or an administrator
// raises) while nothing the allocator sees changes is tried again after
// QuotaRetry; before, an application refused its first pods waited forever.
func TestQuotaFreedElsewhere(t *testing.T) {
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) {
			w := newWorld(t, Options{Policy: policy, BatchSize: 5, BatchDelay: time.Second, MaxPendingPods: 5}, 2)
			w.createErr = quotaErr
			w.round()
			// While the quota stays full: one probe per QuotaRetry, and the
			// limit never lifts in between (its log and the backend's
			// start-up wait would flap).
			probes := 0
			for range int(3 * QuotaRetry / time.Second) {
				w.advance(time.Second)
				p := w.round()
				probes += len(p.Create)
				if p.Limit.Held == 0 {
					t.Fatalf("at %s: the limit lifted while the quota is full", w.now.Sub(t0))
				}
			}
			if probes < 2 || probes > 3 {
				t.Errorf("%d creates in %s of a full quota, want one per %s", probes, 3*QuotaRetry, QuotaRetry)
			}
			w.createErr = nil
			created := map[executorid.ID]bool{}
			for range int(2 * QuotaRetry / time.Second) {
				w.advance(time.Second)
				p := w.round()
				for _, id := range p.Create {
					created[id] = true
				}
				w.appearLast(snapshot.Running)
			}
			if len(created) != 2 {
				t.Errorf("%d executors created after the quota had room again, want 2", len(created))
			}
		})
	}
}
