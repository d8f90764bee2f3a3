package procnode

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPodStateApply(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "img"}}}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newPodState(pod, "127.1.0.1", "127.0.0.1", t0)
	st := corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	s.apply(&st, 1, t0)
	if st.Phase != corev1.PodPending || st.PodIP != "127.1.0.1" || st.ContainerStatuses[0].State.Waiting == nil {
		t.Fatalf("pending status = %+v", st)
	}
	if c := cond(st, corev1.PodScheduled); c == nil || c.Status != corev1.ConditionTrue {
		t.Error("the scheduler's condition was dropped")
	}

	p := &process{pid: 42, started: t0.Add(time.Second)}
	s.ctrs[0].setRunning(p)
	s.phase = corev1.PodRunning
	t1 := t0.Add(2 * time.Second)
	s.apply(&st, 1, t1)
	ready := cond(st, corev1.PodReady)
	if ready == nil || ready.Status != corev1.ConditionTrue || !ready.LastTransitionTime.Time.Equal(t1) {
		t.Errorf("Ready = %+v, want True since %s", ready, t1)
	}
	if cs := st.ContainerStatuses[0]; !cs.Ready || cs.ContainerID != "procnode://42" || cs.State.Running == nil {
		t.Errorf("running container status = %+v", cs)
	}
	s.apply(&st, 1, t1.Add(time.Minute))
	if got := cond(st, corev1.PodReady).LastTransitionTime; !got.Time.Equal(t1) {
		t.Errorf("unchanged Ready moved its transition time to %s", got)
	}

	p.exit = exitStatus{code: 137, signal: 9, finished: t1}
	s.ctrs[0].setExited(p)
	s.phase = s.finalPhase()
	s.apply(&st, 1, t1)
	term := st.ContainerStatuses[0].State.Terminated
	if st.Phase != corev1.PodFailed || term == nil || term.ExitCode != 137 || term.Reason != "Error" || term.Signal != 9 {
		t.Errorf("phase %s, terminated %+v", st.Phase, term)
	}
	if c := cond(st, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted" {
		t.Errorf("Ready of an ended pod = %+v", c)
	}
}

func TestFinalPhase(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "i"}},
		Containers:     []corev1.Container{{Name: "a"}, {Name: "b"}},
	}}
	s := newPodState(pod, "", "127.0.0.1", time.Now())
	if s.finalPhase() != corev1.PodFailed {
		t.Error("a pod whose init containers never completed must fail")
	}
	s.initDone = true
	ok := &process{exit: exitStatus{code: 0}}
	s.ctrs[0].setExited(ok)
	s.ctrs[1].setExited(ok)
	if s.finalPhase() != corev1.PodSucceeded {
		t.Error("all containers exited 0: want Succeeded")
	}
	s.ctrs[1].setExited(&process{exit: exitStatus{code: 1}})
	if s.finalPhase() != corev1.PodFailed {
		t.Error("one container exited 1: want Failed")
	}
}

func cond(st corev1.PodStatus, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}
