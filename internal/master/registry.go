package master

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/scheduler"
)

// App is what a cluster manager needs to build an application's backend.
type App struct {
	ID     string
	Master URL
	// Scheduler is the scheduler the backend is built for: it is being
	// built (scheduler.New), and launches on the backend once New returns.
	Scheduler *scheduler.Scheduler
	Security  Security
	// Attempt is which attempt of the application the driver is: a
	// restarted one adopts the executors of earlier attempts.
	Attempt Attempt
	// Coarse are the coarse-grained backend's options the driver read from
	// the configuration (what executors are sent, timeouts, prefetch); a
	// cluster manager that runs one adds its addresses, executor counts,
	// hooks, logger and events.
	Coarse coarse.Options
	// Events hears what the cluster manager does: executors added and
	// removed, allocation rounds, pods created and placed.
	Events *events.Bus
	Logger *slog.Logger
	// Fail ends the application with err: for failures the cluster manager
	// detects on its own (no executor can start, too many executor
	// failures, a pod spec the API server rejects).
	Fail func(err error)
}

// Cluster is a running cluster manager for one application.
type Cluster interface {
	// Backend is the scheduler backend, not yet started.
	Backend() backend.SchedulerBackend
	// Allocation changes the number of executors; nil when the cluster
	// manager has a fixed set (local mode).
	Allocation() backend.Scalable
	// Start starts the backend and the executors.
	Start(ctx context.Context) error
	// Stop stops the executors and the backend and releases what the
	// cluster manager created.
	Stop(ctx context.Context) error
}

// Factory creates the cluster manager of one master URL kind. conf is the
// application's configuration, for the factory to load the cluster
// manager's own options from (Kubernetes' k8sconf.Load, local
// directories): nothing it builds is given conf.
type Factory func(app App, conf *config.Conf) (Cluster, error)

var (
	mu        sync.RWMutex
	factories = map[Kind]Factory{}
)

// RegisterClusterManager makes a kind of master URL available.
func RegisterClusterManager(k Kind, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	factories[k] = f
}

// Available reports whether a cluster manager serves master URLs of kind k
// in this build.
func Available(k Kind) bool {
	mu.RLock()
	defer mu.RUnlock()
	return factories[k] != nil
}

// NewCluster creates the cluster manager for app.Master with the factory
// registered for its kind. The driver calls it from scheduler.New's build,
// which makes the cluster manager's backend the one app.Scheduler launches
// on.
func NewCluster(app App, conf *config.Conf) (Cluster, error) {
	mu.RLock()
	f := factories[app.Master.Kind]
	mu.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("master URL %q: %s cluster manager is not available in this build", app.Master.Raw, app.Master.Kind)
	}
	return f(app, conf)
}

// NewAppID returns a new application id, drover-<16 hex digits>: the
// spark-app-selector label of its pods and the name client-mode
// applications are found by.
func NewAppID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "drover-" + hex.EncodeToString(b)
}
