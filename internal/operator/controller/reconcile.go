package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

// Reconciler runs DroverApplications: one Reconcile reads the object and
// its current driver pod from the cache, Decide says what follows, and
// Reconcile does it: submit, delete, write the status (only when it
// changed) and record an event per transition.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server, for the rare answers the cache
	// cannot give (a pod it has not seen yet, or no more).
	APIReader client.Reader
	// Clientset is what drover submit's code creates the driver's objects
	// with.
	Clientset kubernetes.Interface
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	// Master is the drivers' spark.master for submit's checks: the API
	// server this controller talks to, k8s://https://host:port.
	Master string
	Log    *slog.Logger
}

// cacheLag is how long after a submission a driver pod missing from the
// cache is taken as not seen yet rather than deleted.
const cacheLag = 10 * time.Second

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app v1alpha1.DroverApplication
	if err := r.Client.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if app.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // garbage collection takes its pods
	}
	obs := Observed{App: &app, Now: r.Clock.Now()}
	if followsDriver(app.Status.State) && app.Status.DriverPod != "" {
		pod, wait, err := r.driver(ctx, &app, obs.Now)
		if err != nil || wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, err
		}
		obs.Driver = pod
		if live(pod) {
			if obs.Executors, err = r.executors(ctx, app.Namespace, app.Status.AppID); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	d := Decide(obs)
	switch d.Action {
	case ActSubmit:
		s, err := r.submitAttempt(ctx, &app, app.Status.Attempts+1)
		if errors.Is(err, errPartial) {
			r.Log.Info("removed what an interrupted submission left", "application", req.String(), "attempt", s.Attempt)
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		d = Submitted(&app, &d.Status, s, r.Clock.Now())
	case ActDeleteDriver:
		if err := r.deletePod(ctx, obs.Driver); err != nil {
			return ctrl.Result{}, err
		}
	case ActDeleteApp:
		err := r.Client.Delete(ctx, &app, client.Preconditions{UID: &app.UID}, client.PropagationPolicy("Background"))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return ctrl.Result{}, fmt.Errorf("deleting %s after its timeToLiveSeconds: %w", req, err)
		}
		r.Recorder.Eventf(&app, nil, corev1.EventTypeNormal, "Deleted", "Delete",
			"timeToLiveSeconds (%d) after the end: deleted", *app.Spec.TimeToLiveSeconds)
		return ctrl.Result{}, nil
	}
	if !equality.Semantic.DeepEqual(app.Status, d.Status) {
		old := app.Status
		app.Status = d.Status
		// An update, not a patch: its resourceVersion makes a decision
		// taken on a stale object fail (Conflict) instead of winning.
		if err := r.Client.Status().Update(ctx, &app); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, nil
			}
			if apierrors.IsConflict(err) {
				// The newer object's event brings it back; this is in case
				// it came before the write.
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			return ctrl.Result{}, fmt.Errorf("updating the status of %s: %w", req, err)
		}
		if ev, ok := transition(&old, &d.Status); ok {
			r.Recorder.Eventf(&app, nil, ev.Type, ev.Reason, string(d.Status.State), "%s", ev.Message)
		}
	}
	return ctrl.Result{RequeueAfter: d.After}, nil
}

// followsDriver reports whether a state has a driver pod to look at.
func followsDriver(s v1alpha1.State) bool {
	return s == v1alpha1.StateSubmitted || s == v1alpha1.StateRunning || s == v1alpha1.StateSuspended
}

// driver is the current attempt's driver pod from the cache. A pod missing
// there is looked up on the API server, unless it was created moments ago
// (then the cache has not seen it yet: wait is when to look again).
func (r *Reconciler) driver(ctx context.Context, app *v1alpha1.DroverApplication, now time.Time) (pod *corev1.Pod, wait time.Duration, err error) {
	key := types.NamespacedName{Namespace: app.Namespace, Name: app.Status.DriverPod}
	pod = &corev1.Pod{}
	err = r.Client.Get(ctx, key, pod)
	if err == nil {
		return pod, 0, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, 0, fmt.Errorf("reading driver pod %s: %w", key, err)
	}
	if c := meta.FindStatusCondition(app.Status.Conditions, v1alpha1.ConditionSubmitted); c != nil && app.Status.State == v1alpha1.StateSubmitted {
		if age := now.Sub(c.LastTransitionTime.Time); age >= 0 && age < cacheLag {
			return nil, cacheLag - age, nil
		}
	}
	if err = r.APIReader.Get(ctx, key, pod); apierrors.IsNotFound(err) {
		return nil, 0, nil
	} else if err != nil {
		return nil, 0, fmt.Errorf("reading driver pod %s: %w", key, err)
	}
	return pod, 0, nil
}

// executors counts an attempt's executor pods, from the cache's index.
func (r *Reconciler) executors(ctx context.Context, ns, appID string) (v1alpha1.ExecutorCounts, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingFields{indexAppID: appID}); err != nil {
		return v1alpha1.ExecutorCounts{}, fmt.Errorf("listing the executors of %s: %w", appID, err)
	}
	var c v1alpha1.ExecutorCounts
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Labels[snapshot.LabelRole] != snapshot.RoleExecutor {
			continue
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			c.Running++
		case corev1.PodPending, "":
			c.Pending++
		case corev1.PodFailed:
			c.Failed++
		}
	}
	return c, nil
}

// deletePod deletes a driver pod (garbage collection takes its executors,
// config map, Secret and service).
func (r *Reconciler) deletePod(ctx context.Context, pod *corev1.Pod) error {
	err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}, client.PropagationPolicy("Background"))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting driver pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// Event is a Kubernetes event about an application.
type Event struct{ Type, Reason, Message string }

// transition is the event of a status change: one per new state or
// reason, none for changes within one (executor counts, messages).
func transition(old, cur *v1alpha1.DroverApplicationStatus) (Event, bool) {
	if old.State == cur.State && old.Reason == cur.Reason {
		return Event{}, false
	}
	typ := corev1.EventTypeNormal
	if cur.State == v1alpha1.StateFailed || cur.State == v1alpha1.StateRetrying {
		typ = corev1.EventTypeWarning
	}
	msg := fmt.Sprintf("%s: %s", cur.State, cur.Message)
	if len(msg) > maxNote {
		msg = msg[:maxNote-3] + "..."
	}
	return Event{Type: typ, Reason: cur.Reason, Message: msg}, true
}

// maxNote is below the 1 kB the API server allows an event's note.
const maxNote = 1000
