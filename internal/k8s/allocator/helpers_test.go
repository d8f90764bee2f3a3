package allocator

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// podOpt changes a test pod.
type podOpt func(*corev1.Pod)

func createdAt(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

func onNode(p *corev1.Pod) { p.Spec.NodeName = "node-1" }

func unschedulableCond(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
	})
}

// execPod builds an executor pod in state st, created at t0 unless told.
func execPod(id executorid.ID, st snapshot.State, opts ...podOpt) snapshot.ExecutorPod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:              fmt.Sprintf("app-exec-%d", id),
		CreationTimestamp: metav1.NewTime(t0),
		Labels:            map[string]string{snapshot.LabelExecutorID: fmt.Sprint(id)},
	}}
	if st == snapshot.Running {
		p.Spec.NodeName = "node-1"
	}
	for _, o := range opts {
		o(p)
	}
	return snapshot.ExecutorPod{ID: id, Pod: snapshot.NewPod(p), State: st}
}

func ids(from, to executorid.ID) []executorid.ID {
	var out []executorid.ID
	for id := from; id <= to; id++ {
		out = append(out, id)
	}
	return out
}

// world drives Decide round by round against a cluster the test edits: the
// cache's pods, the registered executors, the outcome of each create.
type world struct {
	t          *testing.T
	o          Options
	s          State
	now        time.Time
	target     int
	pods       map[executorid.ID]snapshot.ExecutorPod
	registered map[executorid.ID]bool
	seen       map[executorid.ID]bool
	// createErr decides each create's outcome; nil means success. As the
	// loop does, creates after the first failure are not attempted.
	createErr func(id executorid.ID) error
	creates   []CreateResult
	deletes   []DeleteResult
	// deleteErr is the outcome of every delete call.
	deleteErr error
	// plans holds every plan decided so far.
	plans []Plan
}

func newWorld(t *testing.T, o Options, target int) *world {
	return &world{t: t, o: o, now: t0, target: target,
		pods: map[executorid.ID]snapshot.ExecutorPod{}, registered: map[executorid.ID]bool{}, seen: map[executorid.ID]bool{}}
}

func (w *world) snapshot() snapshot.Snapshot {
	pods := make(map[executorid.ID]snapshot.ExecutorPod, len(w.pods))
	for id, p := range w.pods {
		pods[id] = p
	}
	return snapshot.Snapshot{Pods: pods, Time: w.now}
}

// round runs Decide once and applies the plan to the world's bookkeeping
// (not to its pods: the test decides what the cache shows).
func (w *world) round() Plan {
	w.t.Helper()
	in := Input{Now: w.now, Target: w.target, Snapshot: w.snapshot(), Seen: w.seen,
		Registered: w.registered, CreateResults: w.creates, DeleteResults: w.deletes}
	w.creates, w.deletes, w.seen = nil, nil, map[executorid.ID]bool{}
	p := Decide(&w.s, in, w.o)
	failed := false
	for _, id := range p.Create {
		var err error
		switch {
		case failed:
			err = ErrNotAttempted
		case w.createErr != nil:
			err = w.createErr(id)
		}
		if classify(err) != classOK && err != ErrNotAttempted {
			failed = true
		}
		w.creates = append(w.creates, CreateResult{ID: id, Err: err})
	}
	for _, d := range [][]executorid.ID{p.DeleteLost, p.DeleteUnseen, p.DeleteExcess} {
		if len(d) > 0 {
			w.deletes = append(w.deletes, DeleteResult{IDs: d, Err: w.deleteErr})
		}
	}
	w.plans = append(w.plans, p)
	return p
}

// set puts pods into the cache.
func (w *world) set(pods ...snapshot.ExecutorPod) {
	for _, p := range pods {
		w.pods[p.ID] = p
	}
}

// appear puts the given executors' pods into the cache in state st.
func (w *world) appear(st snapshot.State, ids []executorid.ID, opts ...podOpt) {
	for _, id := range ids {
		w.set(execPod(id, st, append([]podOpt{createdAt(w.now)}, opts...)...))
	}
}

// appearLast puts the pods created by the last plan into the cache.
func (w *world) appearLast(st snapshot.State, opts ...podOpt) {
	w.appear(st, w.plans[len(w.plans)-1].Create, opts...)
}

func (w *world) advance(d time.Duration) { w.now = w.now.Add(d) }
