package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/settings"
)

func init() {
	master.RegisterClusterManager(master.Local, newLocal)
	master.RegisterClusterManager(master.LocalCluster, newLocalCluster)
}

type localCluster struct {
	b      *Backend
	events *events.Bus
}

func newLocal(app master.App, conf *config.Conf) (master.Cluster, error) {
	cores := app.Master.Threads
	b := NewBackend(app.Scheduler, cores, config.DefaultParallelism.Get(conf))
	b.LocalDir = config.LocalDirs(conf)[0]
	b.Store = objstore.New(settings.ObjectStore(conf))
	b.Logger = app.Logger
	return &localCluster{b: b, events: app.Events}, nil
}

func (l *localCluster) Backend() backend.SchedulerBackend { return l.b }
func (l *localCluster) Allocation() backend.Scalable      { return nil }
func (l *localCluster) Start(ctx context.Context) error {
	if err := l.b.Start(ctx); err != nil {
		return err
	}
	// The driver is the one executor, as in Spark's UI.
	l.events.Publish(&events.ExecutorAdded{Executor: executorid.Driver, Address: "driver", Cores: l.b.cores})
	return nil
}
func (l *localCluster) Stop(ctx context.Context) error { return l.b.Stop(ctx) }

type processCluster struct {
	b *coarse.Backend
	c *Cluster
}

func newLocalCluster(app master.App, conf *config.Conf) (master.Cluster, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the application binary for executor processes: %w", err)
	}
	m := app.Master
	// With dynamic allocation N is the most executors there may be; it
	// starts from the initial target.
	initial := m.Executors
	if config.DynamicAllocationEnabled.Get(conf) {
		n, err := settings.InitialExecutors(conf)
		if err != nil {
			return nil, err
		}
		initial = min(n, m.Executors)
	}
	c := NewCluster(ClusterOptions{
		Binary:      bin,
		AppID:       app.ID,
		Executors:   initial,
		Cores:       m.CoresPerExecutor,
		MemoryBytes: int64(m.MemoryMiB) << 20,
		Auth:        app.Security.Executors,
		WorkDir:     filepath.Join(config.LocalDirs(conf)[0], "drover-"+app.ID),
		Env:         config.LogEnv(conf),
		Logger:      app.Logger,
	})
	// local-cluster starts all its executors at once; unless told
	// otherwise, wait for all of them so the first job is spread over every
	// process.
	ratio := 1.0
	if config.MinRegisteredResourcesRatio.IsSet(conf) {
		ratio = config.MinRegisteredResourcesRatio.Get(conf)
	}
	opts := app.Coarse
	opts.BindAddress = "127.0.0.1"
	opts.InitialExecutors, opts.MinRegisteredRatio = initial, ratio
	opts.Logger, opts.Events = app.Logger, app.Events
	b := coarse.New(app.Scheduler, c, opts)
	return &processCluster{b: b, c: c}, nil
}

func (p *processCluster) Backend() backend.SchedulerBackend { return p.b }
func (p *processCluster) Allocation() backend.Scalable      { return backend.NewScalable(p.c, p.b) }

func (p *processCluster) Start(ctx context.Context) error {
	if err := p.b.Start(ctx); err != nil {
		return err
	}
	return p.c.Start(p.b)
}

func (p *processCluster) Stop(ctx context.Context) error {
	p.c.Stopping()
	err := p.b.Stop(ctx)
	if cerr := p.c.Stop(ctx); err == nil {
		err = cerr
	}
	return err
}
