package allocator

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// gatedByKueue holds a pod as Kueue does until its workload is admitted.
func gatedByKueue(queue string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels[snapshot.LabelKueueQueue] = queue
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: snapshot.GateKueue}}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated,
		})
	}
}

// runRounds runs a round a second for d and returns every id created.
func (w *world) runRounds(d time.Duration, each func(Plan)) []executorid.ID {
	var created []executorid.ID
	for end := w.now.Add(d); w.now.Before(end); w.now = w.now.Add(time.Second) {
		p := w.round()
		created = append(created, p.Create...)
		if each != nil {
			each(p)
		}
	}
	return created
}

// A queue that holds every pod for ten minutes: the pods wait as pending
// pods the cluster has not admitted. Nothing is created beyond the cap,
// nothing is deleted as lost or stuck, the wait names the queue; once the
// gate is lifted, the rest of the target follows.
func TestGateHeldTenMinutesThenLifted(t *testing.T) {
	o := Options{Policy: PolicyAdaptive, BatchSize: 5, BatchDelay: time.Second, PodCreationTimeout: 30 * time.Second}
	w := newWorld(t, o, 10)
	first := w.round().Create
	if len(first) != 5 {
		t.Fatalf("first round created %v, want the batch of 5", first)
	}
	w.appear(snapshot.Gated, first, gatedByKueue("team-a"))
	more := w.runRounds(10*time.Minute, func(p Plan) {
		if len(p.DeleteLost)+len(p.DeleteUnseen)+len(p.DeleteExcess) > 0 {
			t.Fatalf("at %s: deleted lost %v, excess %v %v; gated pods are neither", w.now.Sub(t0), p.DeleteLost, p.DeleteUnseen, p.DeleteExcess)
		}
		if want := "5 waiting for queue admission (queue team-a)"; p.Waiting() != want {
			t.Fatalf("at %s: waiting %q, want %q", w.now.Sub(t0), p.Waiting(), want)
		}
		if p.Counts.Gated != 5 || p.Counts.Pending != 5 {
			t.Fatalf("at %s: counts %+v, want the 5 pods gated and pending", w.now.Sub(t0), p.Counts)
		}
	})
	if len(more) != 0 {
		t.Fatalf("created %v while the queue held the first 5: gated pods count against the pending cap", more)
	}

	// Admitted: Kueue lifts the gate, the scheduler binds, they run.
	w.appear(snapshot.Running, first)
	rest := w.runRounds(5*time.Second, nil)
	if len(rest) != 5 {
		t.Fatalf("after admission created %v, want the 5 missing executors", rest)
	}
	w.appear(snapshot.Running, rest)
	p := w.round()
	if len(p.Create) != 0 || p.Waiting() != "" || p.Counts.Running != 10 {
		t.Errorf("at the target: %+v, waiting %q; want 10 running and nothing more", p.Counts, p.Waiting())
	}
}

// A queue that admits half of a group created at once (a gang the
// cluster's quota splits): the admitted half runs, the other half waits
// without replacement or deletion.
func TestGateLiftedForHalfAGang(t *testing.T) {
	o := Options{Policy: PolicyAdaptive, BatchSize: 8, BatchDelay: time.Second, PodCreationTimeout: 30 * time.Second,
		MaxPendingPods: 8}
	w := newWorld(t, o, 8)
	gang := w.round().Create
	if len(gang) != 8 {
		t.Fatalf("created %v, want the whole group of 8 at once", gang)
	}
	w.appear(snapshot.Running, gang[:4])
	w.appear(snapshot.Gated, gang[4:], gatedByKueue("batch"))
	extra := w.runRounds(5*time.Minute, func(p Plan) {
		if len(p.DeleteLost)+len(p.DeleteUnseen)+len(p.DeleteExcess) > 0 {
			t.Fatalf("deleted %v %v %v", p.DeleteLost, p.DeleteUnseen, p.DeleteExcess)
		}
		if p.Counts.Running != 4 || p.Counts.Gated != 4 {
			t.Fatalf("counts %+v, want 4 running and 4 gated", p.Counts)
		}
	})
	if len(extra) != 0 {
		t.Errorf("created %v; the group is complete, half of it waits for the queue", extra)
	}
}

func TestGateNames(t *testing.T) {
	for _, tc := range []struct {
		opts []podOpt
		want string
	}{
		{nil, ""},
		{[]podOpt{gatedByKueue("q1")}, "queue q1"},
		{[]podOpt{func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
		}}, "scheduling gate example.com/quota"},
	} {
		ep := execPod(1, snapshot.Pending, append(tc.opts, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })...)
		if got := ep.Pod.Gate(); got != tc.want {
			t.Errorf("Gate = %q, want %q", got, tc.want)
		}
		wantState := snapshot.Pending
		if tc.want != "" {
			wantState = snapshot.Gated
		}
		if got := snapshot.Classify(ep.Pod, ""); got != wantState {
			t.Errorf("Classify = %v, want %v", got, wantState)
		}
	}
}

// A gang the queue admits only once all its pods exist: the allocator
// creates the whole group, in rounds that grow while the queue holds the
// last one's pods, never more than the group, and the pending cap does not
// stop it short of the group (the deadlock a cap of max(batch, running)
// would cause).
func TestGangCreatedWholeWhileGated(t *testing.T) {
	o := Options{Policy: PolicyAdaptive, BatchSize: 5, BatchDelay: time.Second, PodCreationTimeout: 30 * time.Second, Gang: 40}
	w := newWorld(t, o, 40)
	var created []executorid.ID
	rounds := 0
	for len(created) < 40 && rounds < 20 {
		p := w.round()
		created = append(created, p.Create...)
		w.appear(snapshot.Gated, p.Create, gatedByKueue("team-a"))
		w.now = w.now.Add(time.Second)
		rounds++
	}
	if len(created) != 40 {
		t.Fatalf("created %d pods in %d rounds, want the gang of 40", len(created), rounds)
	}
	if rounds > 5 {
		t.Errorf("the gang took %d rounds of batch 5; rounds should double while the queue holds them (5+10+20+5)", rounds)
	}
	extra := w.runRounds(2*time.Minute, func(p Plan) {
		if want := "40 waiting for queue admission (queue team-a)"; p.Waiting() != want {
			t.Fatalf("waiting %q, want %q", p.Waiting(), want)
		}
	})
	if len(extra) != 0 {
		t.Errorf("created %v beyond the gang", extra)
	}
	// Admitted as one: all run, nothing more is created.
	w.appear(snapshot.Running, created)
	if p := w.round(); len(p.Create) != 0 || p.Counts.Running != 40 || p.Waiting() != "" {
		t.Errorf("after admission: created %v, counts %+v, waiting %q", p.Create, p.Counts, p.Waiting())
	}
}

func TestGangNeedsPendingRoom(t *testing.T) {
	o := Options{Policy: PolicyAdaptive, BatchSize: 5, BatchDelay: time.Second, Gang: 40, MaxPendingPods: 10}
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "at most 10 pending executor pods (spark.kubernetes.allocation.maxPendingPods) is fewer than the gang of 40") {
		t.Errorf("Validate = %v, want the pending cap below the gang refused", err)
	}
	o.MaxPendingPods = 40
	if err := o.Validate(); err != nil {
		t.Errorf("Validate with room for the gang: %v", err)
	}
}
