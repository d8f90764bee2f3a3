package master

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/scheduler"
)

// App is what a cluster manager needs to build an application's backend.
type App struct {
	ID        string
	Conf      *config.Conf
	Master    URL
	Scheduler *scheduler.Scheduler
	Security  Security
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

// Factory creates the cluster manager of one master URL kind.
type Factory func(app App) (Cluster, error)

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

// NewCluster creates the cluster manager for app.Master, and makes its
// backend the one app.Scheduler launches on: backend and scheduler refer
// to each other, and this is where both exist first.
func NewCluster(app App) (Cluster, error) {
	mu.RLock()
	f := factories[app.Master.Kind]
	mu.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("master URL %q: %s cluster manager is not available in this build", app.Master.Raw, app.Master.Kind)
	}
	c, err := f(app)
	if err != nil {
		return nil, err
	}
	if app.Scheduler != nil {
		app.Scheduler.SetBackend(c.Backend())
	}
	return c, nil
}

// NewAppID returns a new application id, drover-<16 hex digits>: the
// spark-app-selector label of its pods and the name client-mode
// applications are found by.
func NewAppID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "drover-" + hex.EncodeToString(b)
}
