package procnode

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// The kubelet's words for a pod past spec.activeDeadlineSeconds
// (pkg/kubelet/active_deadline.go).
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// activeDeadline is when a pod active since start passes its
// spec.activeDeadlineSeconds; ok is false when it has none. Like the
// kubelet, it counts from status.startTime, which the API stores in whole
// seconds.
func activeDeadline(pod *corev1.Pod, start time.Time) (at time.Time, ok bool) {
	s := pod.Spec.ActiveDeadlineSeconds
	if s == nil {
		return time.Time{}, false
	}
	return start.Add(time.Duration(*s) * time.Second), true
}

// deadline watches a pod's active deadline, which may be set or lowered
// while the pod runs (the field is mutable): arm it again with every new
// version of the pod. C receives once the deadline may have passed; passed
// says whether it has.
type deadline struct {
	clk   clock.WithDelayedExecution
	start time.Time
	C     chan struct{}

	mu    sync.Mutex
	at    time.Time
	set   bool
	timer clock.Timer
}

func newDeadline(clk clock.WithDelayedExecution, start time.Time) *deadline {
	return &deadline{clk: clk, start: start, C: make(chan struct{}, 1)}
}

func (d *deadline) fire() {
	select {
	case d.C <- struct{}{}:
	default:
	}
}

// arm sets the deadline from pod's spec; an unchanged one keeps its timer.
func (d *deadline) arm(pod *corev1.Pod) {
	at, ok := activeDeadline(pod, d.start)
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok == d.set && at.Equal(d.at) {
		return
	}
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.at, d.set = at, ok
	if !ok {
		return
	}
	if wait := at.Sub(d.clk.Now()); wait > 0 {
		d.timer = d.clk.AfterFunc(wait, d.fire)
		return
	}
	d.fire()
}

// passed reports whether the pod has been active for its deadline or
// longer (the kubelet's duration >= allowed).
func (d *deadline) passed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.set && !d.clk.Now().Before(d.at)
}

// stop releases the timer.
func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}
