package scheduled

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

// AnnotationScheduledAt on a run holds when it was due (RFC 3339, UTC).
const AnnotationScheduledAt = "drover.io/scheduled-at"

// ConditionScheduleValid is False while spec.schedule or spec.timeZone
// cannot be used (reason InvalidSchedule); nothing runs meanwhile.
const ConditionScheduleValid = "ScheduleValid"

// ControllerName names the controller, its logs and its events.
const ControllerName = "drover-scheduled"

// Options configure the controller.
type Options struct {
	// Clock tells the time and wakes the controller when a run is due; nil
	// is the real clock. Tests step a k8s.io/utils/clock/testing.FakeClock.
	Clock clock.WithTicker
	// Logger receives the controller's own lines; nil is slog.Default().
	Logger *slog.Logger
}

// recorder is the part of controller-runtime's events.k8s.io recorder used
// here, so that this package need not import client-go.
type recorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// reconciler is the loop around Decide: it reads the object and its runs,
// carries out the plan, writes the status and asks the waker for the next
// due time.
type reconciler struct {
	client client.Client
	// reader reads the API server itself, past the cache.
	reader client.Reader
	clock  clock.WithTicker
	log    *slog.Logger
	events recorder
	wake   *waker
}

// +kubebuilder:rbac:groups=drover.io,resources=scheduleddroverapplications,verbs=get;list;watch
// +kubebuilder:rbac:groups=drover.io,resources=scheduleddroverapplications/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=drover.io,resources=scheduleddroverapplications/finalizers,verbs=update
// +kubebuilder:rbac:groups=drover.io,resources=droverapplications,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the ScheduledDroverApplication controller with
// mgr, adding drover.io/v1alpha1 to its scheme.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := v1alpha1.AddToScheme(mgr.GetScheme()); err != nil {
		return fmt.Errorf("scheduled: scheme: %w", err)
	}
	r := &reconciler{
		client: mgr.GetClient(),
		reader: mgr.GetAPIReader(),
		clock:  opts.Clock,
		log:    opts.Logger,
		events: mgr.GetEventRecorder(ControllerName),
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.log = r.log.With("controller", ControllerName)
	r.wake = newWaker(r.clock)
	if err := mgr.Add(r.wake); err != nil {
		return fmt.Errorf("scheduled: waker: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.ScheduledDroverApplication{}).
		Owns(&v1alpha1.DroverApplication{}).
		WatchesRawSource(source.Channel(r.wake.out, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, key types.NamespacedName) []ctrl.Request {
				return []ctrl.Request{{NamespacedName: key}}
			}))).
		Complete(r)
	if err != nil {
		return fmt.Errorf("scheduled: controller: %w", err)
	}
	return nil
}

// Reconcile brings one ScheduledDroverApplication up to date.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var parent v1alpha1.ScheduledDroverApplication
	if err := r.client.Get(ctx, req.NamespacedName, &parent); err != nil {
		if apierrors.IsNotFound(err) {
			r.wake.at(ctx, req.NamespacedName, time.Time{})
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get %s: %w", req.NamespacedName, err)
	}
	if parent.DeletionTimestamp != nil {
		// Its runs go with it (owner references); nothing more is due.
		r.wake.at(ctx, req.NamespacedName, time.Time{})
		return ctrl.Result{}, nil
	}
	children, err := r.children(ctx, r.client, &parent)
	if err != nil {
		return ctrl.Result{}, err
	}
	in := Input{
		Name:        parent.Name,
		Spec:        parent.Spec,
		Created:     parent.CreationTimestamp.Time,
		LastRunName: parent.Status.LastRunName,
		Now:         r.clock.Now(),
	}
	if t := parent.Status.LastScheduleTime; t != nil {
		in.LastScheduleTime = t.Time
	}
	in.Runs = runsOf(children)
	plan := Decide(in)
	if slices.ContainsFunc(plan.Delete, func(d Deletion) bool { return d.Reason == ReasonReplaced }) {
		// Deleting a running run cannot be undone: decide again on what the
		// API server holds, not on a cache that may not have seen it end.
		if children, err = r.children(ctx, r.reader, &parent); err != nil {
			return ctrl.Result{}, err
		}
		in.Runs = runsOf(children)
		plan = Decide(in)
	}
	log := r.log.With("namespace", parent.Namespace, "name", parent.Name)
	if err := r.apply(ctx, log, &parent, children, plan); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeStatus(ctx, log, &parent, plan); err != nil {
		return ctrl.Result{}, err
	}
	r.wake.at(ctx, req.NamespacedName, plan.NextScheduleTime)
	return ctrl.Result{}, nil
}

// children are the DroverApplications parent controls.
func (r *reconciler) children(ctx context.Context, from client.Reader, parent *v1alpha1.ScheduledDroverApplication) (map[string]*v1alpha1.DroverApplication, error) {
	var list v1alpha1.DroverApplicationList
	if err := from.List(ctx, &list, client.InNamespace(parent.Namespace)); err != nil {
		return nil, fmt.Errorf("list runs of %s/%s: %w", parent.Namespace, parent.Name, err)
	}
	out := map[string]*v1alpha1.DroverApplication{}
	for i := range list.Items {
		c := &list.Items[i]
		if ref := metav1.GetControllerOf(c); ref != nil && ref.UID == parent.UID {
			out[c.Name] = c
		}
	}
	return out, nil
}

func runsOf(children map[string]*v1alpha1.DroverApplication) []Run {
	var runs []Run
	for _, c := range children {
		runs = append(runs, runOf(c))
	}
	return runs
}

// runOf reads a child: when it was due from its annotation (its creation
// time should someone have removed that) and its state.
func runOf(c *v1alpha1.DroverApplication) Run {
	t, err := time.Parse(time.RFC3339, c.Annotations[AnnotationScheduledAt])
	if err != nil {
		t = c.CreationTimestamp.Time
	}
	return Run{Name: c.Name, Scheduled: t.UTC(), State: c.Status.State, Deleting: c.DeletionTimestamp != nil}
}

// apply carries out the plan's deletions and creation, with an event for
// each. A failed replacement or creation is an error (the run is retried);
// a failed pruning is only logged, the next reconciliation tries again.
func (r *reconciler) apply(ctx context.Context, log *slog.Logger, parent *v1alpha1.ScheduledDroverApplication,
	children map[string]*v1alpha1.DroverApplication, plan Plan) error {
	if plan.Invalid != nil && !meta.IsStatusConditionFalse(parent.Status.Conditions, ConditionScheduleValid) {
		log.Warn("schedule not usable", "err", plan.Invalid)
		r.events.Eventf(parent, nil, corev1.EventTypeWarning, ReasonInvalidSchedule, "Schedule", "%v", plan.Invalid)
	}
	for _, d := range plan.Delete {
		c := children[d.Name]
		err := r.client.Delete(ctx, c, client.Preconditions{UID: &c.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			err = fmt.Errorf("delete run %s/%s: %w", c.Namespace, c.Name, err)
			r.events.Eventf(parent, c, corev1.EventTypeWarning, "FailedDelete", "Delete", "%v", err)
			if d.Reason == ReasonReplaced {
				return err
			}
			log.Warn("pruning a run", "err", err)
			continue
		}
		log.Info("deleted run", "run", d.Name, "reason", d.Reason, "detail", d.Detail)
		r.events.Eventf(parent, c, corev1.EventTypeNormal, d.Reason, "Delete", "Deleted run %s %s", d.Name, d.Detail)
	}
	if plan.Missed > 0 {
		count := fmt.Sprint(plan.Missed)
		if plan.Missed >= walkLimit-1 {
			count += " or more" // latest stops counting there
		}
		r.events.Eventf(parent, nil, corev1.EventTypeWarning, ReasonMissedSchedules, "Schedule",
			"%s earlier due times passed with no run (controller down, or suspended); only the most recent, %s, counts",
			count, plan.LastScheduleTime.Format(time.RFC3339))
	}
	if s := plan.Skipped; s != nil {
		log.Info("skipped run", "run", s.Name, "due", s.Scheduled)
		r.events.Eventf(parent, nil, corev1.EventTypeNormal, ReasonSkipped, "Skip",
			"Skipped the run due %s: %v still running (concurrencyPolicy Forbid)", s.Scheduled.Format(time.RFC3339), plan.Active)
	}
	if c := plan.Create; c != nil {
		app := newRun(parent, *c)
		err := r.client.Create(ctx, app)
		switch {
		case apierrors.IsAlreadyExists(err):
			// Created before, by this controller before a restart, or seen
			// by the API server before this cache: the name is the run's.
		case err != nil:
			err = fmt.Errorf("create run %s/%s: %w", app.Namespace, app.Name, err)
			r.events.Eventf(parent, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "%v", err)
			return err
		default:
			log.Info("created run", "run", app.Name, "due", c.Scheduled)
			r.events.Eventf(parent, app, corev1.EventTypeNormal, ReasonCreated, "Create",
				"Created run %s, due %s", app.Name, c.Scheduled.Format(time.RFC3339))
		}
	}
	return nil
}

// newRun is the DroverApplication of run: the template's spec, owned by
// parent, with the time it was due.
func newRun(parent *v1alpha1.ScheduledDroverApplication, run Run) *v1alpha1.DroverApplication {
	return &v1alpha1.DroverApplication{
		ObjectMeta: metav1.ObjectMeta{
			Name:        run.Name,
			Namespace:   parent.Namespace,
			Annotations: map[string]string{AnnotationScheduledAt: run.Scheduled.UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent,
				v1alpha1.GroupVersion.WithKind(v1alpha1.KindScheduledApplication))},
		},
		Spec: *parent.Spec.Template.DeepCopy(),
	}
}

// writeStatus patches the status to the plan's, if it changed. The patch
// carries the resourceVersion: written from a stale cache it would move
// lastScheduleTime back, so it fails and the request is retried instead.
func (r *reconciler) writeStatus(ctx context.Context, log *slog.Logger, parent *v1alpha1.ScheduledDroverApplication, plan Plan) error {
	st := parent.Status.DeepCopy()
	st.ObservedGeneration = parent.Generation
	st.LastScheduleTime = metaTime(plan.LastScheduleTime)
	st.NextScheduleTime = metaTime(plan.NextScheduleTime)
	st.LastRunName = plan.LastRunName
	st.Active = plan.Active
	st.PastSuccessfulRunNames = plan.PastSucceeded
	st.PastFailedRunNames = plan.PastFailed
	cond := metav1.Condition{Type: ConditionScheduleValid, Status: metav1.ConditionTrue, Reason: "Parsed",
		Message: "the schedule and time zone are valid", ObservedGeneration: parent.Generation}
	if plan.Invalid != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonInvalidSchedule, plan.Invalid.Error()
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if equality.Semantic.DeepEqual(*st, parent.Status) {
		return nil
	}
	patch := client.MergeFromWithOptions(parent.DeepCopy(), client.MergeFromWithOptimisticLock{})
	parent.Status = *st
	if err := r.client.Status().Patch(ctx, parent, patch); err != nil {
		if apierrors.IsConflict(err) {
			log.Debug("status written from a stale object; retrying", "err", err)
		}
		return fmt.Errorf("status of %s/%s: %w", parent.Namespace, parent.Name, err)
	}
	return nil
}

func metaTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &metav1.Time{Time: t}
}
