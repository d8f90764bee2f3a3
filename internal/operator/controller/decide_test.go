package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

func driverPod(phase corev1.PodPhase, exit *int32) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "spark-kubernetes-driver"}}},
		Status: corev1.PodStatus{Phase: phase}}
	if exit != nil {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark-kubernetes-driver",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: *exit}}}}
	}
	return p
}

// summary is what the table compares of a decision.
type summary struct {
	State    v1alpha1.State
	Reason   string
	Attempts int32
	Action   Action
	After    time.Duration
	Ended    bool
}

func summarize(d Decision) summary {
	return summary{d.Status.State, d.Status.Reason, d.Status.Attempts, d.Action, d.After, d.Status.EndTime != nil}
}

func TestOperatorDecide(t *testing.T) {
	onFailure := v1alpha1.RestartPolicy{Type: v1alpha1.RestartOnFailure, OnFailureRetries: ptr.To[int32](2),
		OnFailureRetryInterval: ptr.To[int64](30)}
	// app is an application in state s after attempts, its attempt
	// submitted (or ended) at t0.
	app := func(s v1alpha1.State, attempts int32, edit ...func(*v1alpha1.DroverApplication)) *v1alpha1.DroverApplication {
		a := &v1alpha1.DroverApplication{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 1}}
		a.Status.State, a.Status.Attempts, a.Status.DriverPod = s, attempts, "a-driver"
		reason := v1alpha1.ReasonSubmitted
		if s == v1alpha1.StateRetrying {
			reason = v1alpha1.ReasonDriverFailed
			a.Status.Reason = reason
		}
		meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionSubmitted,
			Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(t0)})
		if s.Final() {
			a.Status.EndTime = &metav1.Time{Time: t0}
		}
		for _, e := range edit {
			e(a)
		}
		return a
	}
	policy := func(p v1alpha1.RestartPolicy) func(*v1alpha1.DroverApplication) {
		return func(a *v1alpha1.DroverApplication) { a.Spec.RestartPolicy = p }
	}
	suspend := func(v bool) func(*v1alpha1.DroverApplication) {
		return func(a *v1alpha1.DroverApplication) { a.Spec.Suspend = &v }
	}
	ttl := func(a *v1alpha1.DroverApplication) { a.Spec.TimeToLiveSeconds = ptr.To[int64](60) }
	deleting := driverPod(corev1.PodRunning, nil)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	for name, tc := range map[string]struct {
		app    *v1alpha1.DroverApplication
		driver *corev1.Pod
		now    time.Duration // after t0
		want   summary
	}{
		"new":                       {app: app("", 0), want: summary{Action: ActSubmit}},
		"new, suspended":            {app: app("", 0, suspend(true)), want: summary{State: v1alpha1.StateSuspended, Reason: v1alpha1.ReasonSuspended}},
		"pending":                   {app: app(v1alpha1.StateSubmitted, 1), driver: driverPod(corev1.PodPending, nil), want: summary{State: v1alpha1.StateSubmitted, Reason: v1alpha1.ReasonSubmitted, Attempts: 1}},
		"running":                   {app: app(v1alpha1.StateSubmitted, 1), driver: driverPod(corev1.PodRunning, nil), want: summary{State: v1alpha1.StateRunning, Reason: v1alpha1.ReasonDriverRunning, Attempts: 1}},
		"succeeded":                 {app: app(v1alpha1.StateRunning, 1), driver: driverPod(corev1.PodSucceeded, ptr.To[int32](0)), want: summary{State: v1alpha1.StateSucceeded, Reason: v1alpha1.ReasonDriverSucceeded, Attempts: 1, Ended: true}},
		"succeeded, TTL":            {app: app(v1alpha1.StateRunning, 1, ttl), driver: driverPod(corev1.PodSucceeded, ptr.To[int32](0)), now: 10 * time.Second, want: summary{State: v1alpha1.StateSucceeded, Reason: v1alpha1.ReasonDriverSucceeded, Attempts: 1, Ended: true, After: time.Minute}},
		"failed, Never":             {app: app(v1alpha1.StateRunning, 1), driver: driverPod(corev1.PodFailed, ptr.To[int32](1)), want: summary{State: v1alpha1.StateFailed, Reason: v1alpha1.ReasonDriverFailed, Attempts: 1, Ended: true}},
		"failed, a retry left":      {app: app(v1alpha1.StateRunning, 2, policy(onFailure)), driver: driverPod(corev1.PodFailed, ptr.To[int32](1)), want: summary{State: v1alpha1.StateRetrying, Reason: v1alpha1.ReasonDriverFailed, Attempts: 2, After: 30 * time.Second}},
		"failed, retries exhausted": {app: app(v1alpha1.StateRunning, 3, policy(onFailure)), driver: driverPod(corev1.PodFailed, ptr.To[int32](1)), want: summary{State: v1alpha1.StateFailed, Reason: v1alpha1.ReasonRetriesExhausted, Attempts: 3, Ended: true}},
		"driver pod deleted":        {app: app(v1alpha1.StateRunning, 1), want: summary{State: v1alpha1.StateFailed, Reason: v1alpha1.ReasonDriverDeleted, Attempts: 1, Ended: true}},
		"retry not due":             {app: app(v1alpha1.StateRetrying, 1, policy(onFailure)), now: 10 * time.Second, want: summary{State: v1alpha1.StateRetrying, Reason: v1alpha1.ReasonDriverFailed, Attempts: 1, After: 20 * time.Second}},
		"retry due":                 {app: app(v1alpha1.StateRetrying, 1, policy(onFailure)), now: 30 * time.Second, want: summary{State: v1alpha1.StateRetrying, Reason: v1alpha1.ReasonDriverFailed, Attempts: 1, Action: ActSubmit}},
		"running, suspended":        {app: app(v1alpha1.StateRunning, 1, suspend(true)), driver: driverPod(corev1.PodRunning, nil), want: summary{State: v1alpha1.StateSuspended, Reason: v1alpha1.ReasonSuspended, Attempts: 1, Action: ActDeleteDriver}},
		"suspended, pod going":      {app: app(v1alpha1.StateSuspended, 1, suspend(true)), driver: deleting, want: summary{State: v1alpha1.StateSuspended, Attempts: 1}},
		"resumed, pod going":        {app: app(v1alpha1.StateSuspended, 1, suspend(false)), driver: deleting, want: summary{State: v1alpha1.StateSuspended, Attempts: 1}},
		"resumed":                   {app: app(v1alpha1.StateSuspended, 1, suspend(false)), want: summary{State: v1alpha1.StateSuspended, Attempts: 1, Action: ActSubmit}},
		"ended, TTL not due":        {app: app(v1alpha1.StateFailed, 1, ttl), now: 50 * time.Second, want: summary{State: v1alpha1.StateFailed, Attempts: 1, Ended: true, After: 10 * time.Second}},
		"ended, TTL due":            {app: app(v1alpha1.StateFailed, 1, ttl), now: time.Minute, want: summary{State: v1alpha1.StateFailed, Attempts: 1, Ended: true, Action: ActDeleteApp}},
	} {
		t.Run(name, func(t *testing.T) {
			d := Decide(Observed{App: tc.app, Driver: tc.driver, Now: t0.Add(tc.now)})
			if tc.want.Reason == "" && tc.app.Status.Reason == "" {
				d.Status.Reason = ""
			}
			if diff := cmp.Diff(tc.want, summarize(d)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOperatorSubmitted(t *testing.T) {
	retry := v1alpha1.RestartPolicy{Type: v1alpha1.RestartOnFailure, OnSubmissionFailureRetries: ptr.To[int32](1),
		OnSubmissionFailureRetryInterval: ptr.To[int64](5)}
	for name, tc := range map[string]struct {
		policy v1alpha1.RestartPolicy
		s      Submission
		want   summary
	}{
		"created":            {s: Submission{Attempt: 1, DriverPod: "p"}, want: summary{State: v1alpha1.StateSubmitted, Reason: v1alpha1.ReasonSubmitted, Attempts: 1, After: followUp}},
		"invalid spec":       {policy: retry, s: Submission{Attempt: 1, Err: errors.New("bad"), Invalid: true}, want: summary{State: v1alpha1.StateFailed, Reason: v1alpha1.ReasonInvalidSpec, Attempts: 1, Ended: true}},
		"refused, retry":     {policy: retry, s: Submission{Attempt: 1, Err: errors.New("quota")}, want: summary{State: v1alpha1.StateRetrying, Reason: v1alpha1.ReasonSubmissionFailed, Attempts: 1, After: 5 * time.Second}},
		"refused, no retry":  {policy: retry, s: Submission{Attempt: 2, Err: errors.New("quota")}, want: summary{State: v1alpha1.StateFailed, Reason: v1alpha1.ReasonRetriesExhausted, Attempts: 2, Ended: true}},
		"refused, Never set": {s: Submission{Attempt: 1, Err: errors.New("quota")}, want: summary{State: v1alpha1.StateFailed, Reason: v1alpha1.ReasonSubmissionFailed, Attempts: 1, Ended: true}},
	} {
		t.Run(name, func(t *testing.T) {
			app := &v1alpha1.DroverApplication{Spec: v1alpha1.DroverApplicationSpec{RestartPolicy: tc.policy}}
			d := Submitted(app, &app.Status, tc.s, t0)
			if diff := cmp.Diff(tc.want, summarize(d)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if d.Status.StartTime == nil {
				t.Error("no start time")
			}
		})
	}
}

func TestOperatorAppID(t *testing.T) {
	a, b := AppID("uid-1", 1), AppID("uid-1", 2)
	if a == b || a != AppID("uid-1", 1) || len(a) != len("drover-")+16 {
		t.Errorf("AppID: %s, %s", a, b)
	}
}
