package controller

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

// Options configure the operator's manager.
type Options struct {
	// Namespace is the only namespace watched; empty watches all.
	Namespace string
	// LeaderElection makes replicas elect one that runs the controller,
	// with a Lease LeaderElectionID in LeaderElectionNamespace (empty: the
	// pod's own namespace when in a cluster).
	LeaderElection                            bool
	LeaderElectionID, LeaderElectionNamespace string
	// MetricsBindAddress and HealthProbeBindAddress are where the
	// manager serves Prometheus metrics and /healthz, /readyz; "0" or
	// empty turns either off.
	MetricsBindAddress, HealthProbeBindAddress string
	// MaxConcurrentReconciles is how many applications are reconciled at
	// once; default DefaultMaxConcurrent.
	MaxConcurrentReconciles int
	// QPS and Burst are the client's request rate limits; default
	// DefaultQPS and twice that.
	QPS   float32
	Burst int
	// UserAgent of the requests; default "drover-operator".
	UserAgent string
	Logger    *slog.Logger
	// Clock is the controller's time; default the real one.
	Clock clock.PassiveClock
	// Controllers are more controllers to run in the same manager (the
	// ScheduledDroverApplication controller): each adds itself.
	Controllers []func(manager.Manager) error
}

// Defaults sized for a thousand and more submissions a minute: each takes
// about five writes (config map, Secret, pod, two owner patches, service,
// status) and the reconciles mostly wait on the API server.
const (
	DefaultMaxConcurrent = 16
	DefaultQPS           = 200
	DefaultLeaseID       = "drover-operator"
)

// indexAppID indexes the cached pods by application id (label
// spark-app-selector), so counting an application's executors reads its
// pods only.
const indexAppID = "drover.io/app-id"

// NewManager builds the operator's manager on cfg: the DroverApplication
// controller, its caches (drover's driver and executor pods only, by
// label) and leader election. Start runs it until its context ends.
func NewManager(cfg *rest.Config, o Options) (manager.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.UserAgent = o.QPS, o.Burst, o.UserAgent
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = int(2 * cfg.QPS)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "drover-operator"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrent
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = DefaultLeaseID
	}
	if o.MetricsBindAddress == "" {
		o.MetricsBindAddress = "0"
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	roles, err := labels.NewRequirement(snapshot.LabelRole, selection.In, []string{snapshot.RoleDriver, snapshot.RoleExecutor})
	if err != nil {
		return nil, err
	}
	copts := cache.Options{
		// Only drover's pods, without their managed fields: the cache
		// holds what the controller reads.
		ByObject:         map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: labels.NewSelector().Add(*roles)}},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if o.Namespace != "" {
		copts.DefaultNamespaces = map[string]cache.Config{o.Namespace: {}}
	}
	log := logr.FromSlogHandler(o.Logger.Handler())
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                        scheme,
		Cache:                         copts,
		Logger:                        log,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		GracefulShutdownTimeout:       ptr.To(10 * time.Second),
	})
	if err != nil {
		return nil, fmt.Errorf("building the operator's manager: %w", err)
	}
	if o.HealthProbeBindAddress != "" && o.HealthProbeBindAddress != "0" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
	}
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, indexAppID, func(obj client.Object) []string {
		if id := obj.GetLabels()[snapshot.LabelAppID]; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("indexing pods: %w", err)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Clientset: cs,
		Recorder: mgr.GetEventRecorder("drover-operator"), Clock: o.Clock, Master: "k8s://" + cfg.Host, Log: o.Logger}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("droverapplication").
		// Its own status writes do not bring an application back: its
		// pods' events and RequeueAfter do.
		For(&v1alpha1.DroverApplication{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.Pod{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.executorOwner),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
				return obj.GetLabels()[snapshot.LabelRole] == snapshot.RoleExecutor
			}))).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles,
			// Tests and benchmarks run several managers in one process.
			SkipNameValidation: ptr.To(true)}).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("building the DroverApplication controller: %w", err)
	}
	for _, add := range o.Controllers {
		if err := add(mgr); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	mgr, err := NewManager(cfg, o)
	if err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the operator: %w", err)
	}
	return nil
}

// executorOwner maps an executor pod to the application of its driver
// pod (its owner), from the cache.
func (r *Reconciler) executorOwner(ctx context.Context, obj client.Object) []ctrl.Request {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind != "Pod" {
			continue
		}
		var driver corev1.Pod
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, &driver); err != nil {
			return nil
		}
		if c := metav1.GetControllerOf(&driver); c != nil && c.Kind == v1alpha1.KindApplication {
			return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: c.Name}}}
		}
	}
	return nil
}
