package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

// Action is what the reconciler does beside writing the status.
type Action int

// Actions of a Decision.
const (
	// ActNone: only the status, if it changed.
	ActNone Action = iota
	// ActSubmit: submit attempt Status.Attempts+1, then apply Submitted.
	ActSubmit
	// ActDeleteDriver: delete the current attempt's driver pod (suspend).
	ActDeleteDriver
	// ActDeleteApp: delete the object (timeToLiveSeconds ran out).
	ActDeleteApp
)

// Observed is what the reconciler saw of one application.
type Observed struct {
	App *v1alpha1.DroverApplication
	// Driver is the current attempt's driver pod (Status.DriverPod); nil
	// when there is none, which the reconciler has made sure of.
	Driver *corev1.Pod
	// Executors counts the current attempt's executor pods.
	Executors v1alpha1.ExecutorCounts
	Now       time.Time
}

// Decision is the next status of an application, what to do, and when to
// look again (After, 0 for only on the next event).
type Decision struct {
	Status v1alpha1.DroverApplicationStatus
	Action Action
	After  time.Duration
}

// Decide is the controller's state machine: from the object and its
// current driver pod to the next status and action. It is pure; the
// reconciler (reconcile.go) reads the inputs and applies the result.
func Decide(o Observed) Decision {
	app := o.App
	st := *app.Status.DeepCopy()
	st.ObservedGeneration = app.Generation
	d := Decision{}
	suspend := app.Spec.Suspend != nil && *app.Spec.Suspend
	switch st.State {
	case v1alpha1.StateSucceeded, v1alpha1.StateFailed:
		st.Executors, st.UIAddress = v1alpha1.ExecutorCounts{}, ""
		d.Action, d.After = expiry(app, &st, o.Now)
	case "", v1alpha1.StateRetrying:
		if suspend {
			suspended(app, &st, o.Now)
			break
		}
		if st.State == v1alpha1.StateRetrying {
			if due := retryDue(app, &st); o.Now.Before(due) {
				d.After = due.Sub(o.Now)
				break
			}
		}
		d.Action = ActSubmit
	case v1alpha1.StateSuspended:
		switch {
		case suspend && live(o.Driver) && o.Driver.DeletionTimestamp == nil:
			d.Action = ActDeleteDriver // a delete that failed
		case suspend:
		case live(o.Driver):
			// Resumed, but the stopped attempt's driver still runs: one
			// driver at a time. Its end is the next event.
		default:
			d.Action = ActSubmit
		}
	case v1alpha1.StateSubmitted, v1alpha1.StateRunning:
		d.After = follow(app, &st, o)
		if suspend && live(o.Driver) {
			suspended(app, &st, o.Now)
			d.Action, d.After = ActDeleteDriver, 0
		}
		if st.State.Final() {
			d.Action, d.After = expiry(app, &st, o.Now)
		}
	}
	d.Status = st
	return d
}

// expiry is what timeToLiveSeconds asks of an ended application: its
// deletion, or a look when it is due.
func expiry(app *v1alpha1.DroverApplication, st *v1alpha1.DroverApplicationStatus, now time.Time) (Action, time.Duration) {
	ttl := app.Spec.TimeToLiveSeconds
	if ttl == nil || st.EndTime == nil {
		return ActNone, 0
	}
	due := st.EndTime.Add(time.Duration(*ttl) * time.Second)
	if now.Before(due) {
		return ActNone, due.Sub(now)
	}
	return ActDeleteApp, 0
}

// follow moves an attempt's status along its driver pod, and returns when
// to look again (a retry's interval).
func follow(app *v1alpha1.DroverApplication, st *v1alpha1.DroverApplicationStatus, o Observed) time.Duration {
	now := metav1.NewTime(o.Now)
	gen := app.Generation
	out := driverOutcome(o.Driver)
	switch out.state {
	case driverPending:
		st.State, st.Reason, st.Message = v1alpha1.StateSubmitted, v1alpha1.ReasonSubmitted, out.message
		st.Executors = o.Executors
	case driverRunning:
		st.State, st.Reason, st.Message = v1alpha1.StateRunning, v1alpha1.ReasonDriverRunning, out.message
		st.Executors = o.Executors
		setCond(st, gen, v1alpha1.ConditionRunning, true, v1alpha1.ReasonDriverRunning, out.message, now)
	case driverSucceeded:
		st.State, st.Reason, st.Message = v1alpha1.StateSucceeded, v1alpha1.ReasonDriverSucceeded, out.message
		st.ExitCode, st.EndTime = out.exitCode, &now
		st.Executors, st.UIAddress = v1alpha1.ExecutorCounts{}, ""
		setCond(st, gen, v1alpha1.ConditionRunning, false, v1alpha1.ReasonDriverSucceeded, out.message, now)
		setCond(st, gen, v1alpha1.ConditionSucceeded, true, v1alpha1.ReasonDriverSucceeded, out.message, now)
	default:
		reason := v1alpha1.ReasonDriverFailed
		if out.state == driverGone {
			reason = v1alpha1.ReasonDriverDeleted
		}
		st.ExitCode = out.exitCode
		setCond(st, gen, v1alpha1.ConditionRunning, false, reason, out.message, now)
		return failed(app, st, reason, out.message, false, o.Now)
	}
	return 0
}

// Submission is how submitting attempt Attempt went.
type Submission struct {
	Attempt                     int32
	AppID, DriverPod, UIAddress string
	// Err is nil when the driver's objects exist (created now, or found
	// from an earlier try of the same attempt).
	Err error
	// Invalid says Err is the spec's fault (drover submit's checks).
	Invalid bool
}

// followUp is when a submitted application is looked at again.
const followUp = time.Second

// Submitted is the status after a submission.
func Submitted(app *v1alpha1.DroverApplication, status *v1alpha1.DroverApplicationStatus, s Submission, t time.Time) Decision {
	st := *status.DeepCopy()
	st.ObservedGeneration = app.Generation
	now := metav1.NewTime(t)
	gen := app.Generation
	st.Attempts = s.Attempt
	st.ExitCode, st.Executors = nil, v1alpha1.ExecutorCounts{}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSuspended); c != nil && c.Status == metav1.ConditionTrue {
		setCond(&st, gen, v1alpha1.ConditionSuspended, false, v1alpha1.ReasonResumed, "spec.suspend is false", now)
	}
	d := Decision{}
	switch {
	case s.Err == nil:
		st.State, st.Reason = v1alpha1.StateSubmitted, v1alpha1.ReasonSubmitted
		st.Message = fmt.Sprintf("attempt %d: driver pod %s", s.Attempt, s.DriverPod)
		st.AppID, st.DriverPod, st.UIAddress = s.AppID, s.DriverPod, s.UIAddress
		setCond(&st, gen, v1alpha1.ConditionSubmitted, true, v1alpha1.ReasonSubmitted, st.Message, now)
		setCond(&st, gen, v1alpha1.ConditionRunning, false, v1alpha1.ReasonSubmitted, "the driver does not run yet", now)
		// A look at the pod soon: one adopted from an interrupted try may
		// have ended already, and then no event of it will come.
		d.After = followUp
	case s.Invalid:
		// No retry mends a spec: final at once, whatever the policy.
		st.State, st.Reason, st.Message = v1alpha1.StateFailed, v1alpha1.ReasonInvalidSpec, s.Err.Error()
		st.EndTime = &now
		setCond(&st, gen, v1alpha1.ConditionSubmitted, false, v1alpha1.ReasonInvalidSpec, st.Message, now)
		setCond(&st, gen, v1alpha1.ConditionFailed, true, v1alpha1.ReasonInvalidSpec, st.Message, now)
	default:
		st.AppID, st.DriverPod, st.UIAddress = s.AppID, "", ""
		d.After = failed(app, &st, v1alpha1.ReasonSubmissionFailed, s.Err.Error(), true, t)
	}
	if st.State.Final() {
		// Deleted at the earliest on the next look.
		_, d.After = expiry(app, &st, t)
	}
	d.Status = st
	return d
}

// failed ends the current attempt: Retrying when the restart policy
// allows another (returning its interval), else Failed.
func failed(app *v1alpha1.DroverApplication, st *v1alpha1.DroverApplicationStatus, reason, msg string, submission bool, t time.Time) time.Duration {
	now := metav1.NewTime(t)
	gen := app.Generation
	st.Executors, st.UIAddress = v1alpha1.ExecutorCounts{}, ""
	p := app.Spec.RestartPolicy
	retries, interval := p.OnFailureRetries, p.OnFailureRetryInterval
	if submission {
		retries, interval = p.OnSubmissionFailureRetries, p.OnSubmissionFailureRetryInterval
	}
	allowed := int32(0)
	if p.Type == v1alpha1.RestartOnFailure && retries != nil {
		allowed = *retries
	}
	if st.Attempts-1 < allowed {
		wait := seconds(interval)
		st.State, st.Reason = v1alpha1.StateRetrying, reason
		st.Message = fmt.Sprintf("attempt %d of %d failed; the next in %s: %s", st.Attempts, allowed+1, wait, msg)
		// Its transition time is when the attempt ended: the retry's
		// interval counts from it (retryDue), across controller restarts.
		setCond(st, gen, v1alpha1.ConditionSubmitted, false, reason, st.Message, now)
		meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSubmitted).LastTransitionTime = now
		return wait
	}
	if allowed > 0 {
		msg = fmt.Sprintf("%d attempts failed, the last: %s", st.Attempts, msg)
		reason = v1alpha1.ReasonRetriesExhausted
	}
	st.State, st.Reason, st.Message, st.EndTime = v1alpha1.StateFailed, reason, msg, &now
	setCond(st, gen, v1alpha1.ConditionFailed, true, reason, msg, now)
	return 0
}

// retryDue is when a Retrying application's next attempt is due.
func retryDue(app *v1alpha1.DroverApplication, st *v1alpha1.DroverApplicationStatus) time.Time {
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSubmitted)
	if c == nil {
		return time.Time{}
	}
	interval := app.Spec.RestartPolicy.OnFailureRetryInterval
	if c.Reason == v1alpha1.ReasonSubmissionFailed {
		interval = app.Spec.RestartPolicy.OnSubmissionFailureRetryInterval
	}
	return c.LastTransitionTime.Add(seconds(interval))
}

// suspended marks the application held by spec.suspend.
func suspended(app *v1alpha1.DroverApplication, st *v1alpha1.DroverApplicationStatus, t time.Time) {
	now := metav1.NewTime(t)
	msg := "spec.suspend is true: nothing runs"
	if st.State == "" || st.State == v1alpha1.StateRetrying {
		// DriverPod stays only for a stopped attempt, whose end Decide
		// waits for before the next.
		st.DriverPod = ""
	}
	if st.State == v1alpha1.StateSubmitted || st.State == v1alpha1.StateRunning {
		msg = fmt.Sprintf("spec.suspend is true: attempt %d stopped (driver pod %s deleted)", st.Attempts, st.DriverPod)
		setCond(st, app.Generation, v1alpha1.ConditionRunning, false, v1alpha1.ReasonSuspended, msg, now)
	}
	st.State, st.Reason, st.Message = v1alpha1.StateSuspended, v1alpha1.ReasonSuspended, msg
	st.Executors, st.UIAddress = v1alpha1.ExecutorCounts{}, ""
	setCond(st, app.Generation, v1alpha1.ConditionSuspended, true, v1alpha1.ReasonSuspended, msg, now)
}

func setCond(st *v1alpha1.DroverApplicationStatus, gen int64, typ string, ok bool, reason, msg string, now metav1.Time) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
		Message: msg, ObservedGeneration: gen, LastTransitionTime: now})
}

func seconds(s *int64) time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(*s) * time.Second
}

type driverState int

const (
	driverPending driverState = iota
	driverRunning
	driverSucceeded
	driverFailed
	driverGone
)

type outcome struct {
	state    driverState
	exitCode *int32
	message  string
}

// live reports whether a driver pod exists and has not ended.
func live(pod *corev1.Pod) bool {
	s := driverOutcome(pod).state
	return s == driverPending || s == driverRunning
}

// driverOutcome reads a driver pod as drover submit's watcher does: a pod
// that failed while being deleted was deleted; the message is submit's
// description of the pod, or the driver's termination message.
func driverOutcome(pod *corev1.Pod) outcome {
	if pod == nil {
		return outcome{state: driverGone, message: "the driver pod was deleted before it ended"}
	}
	container := driverContainer(pod)
	out := outcome{message: submit.Describe(pod, container)}
	var term *corev1.ContainerStateTerminated
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			term = cs.State.Terminated
		}
	}
	if term != nil {
		out.exitCode = &term.ExitCode
		if m := term.Message; m != "" {
			out.message += ": " + m
		}
	}
	switch pod.Status.Phase {
	case corev1.PodRunning:
		out.state = driverRunning
	case corev1.PodSucceeded:
		out.state = driverSucceeded
		if out.exitCode == nil {
			out.exitCode = new(int32)
		}
	case corev1.PodFailed:
		out.state = driverFailed
		if pod.DeletionTimestamp != nil {
			out.state = driverGone
		}
		if r := pod.Status.Reason; r != "" {
			out.message += ": " + r + " " + pod.Status.Message
		}
	}
	return out
}

// driverContainer is the driver's container: drover's name, else the
// first (a pod template may name it otherwise).
func driverContainer(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == podspec.DriverContainerName {
			return c.Name
		}
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return ""
}
