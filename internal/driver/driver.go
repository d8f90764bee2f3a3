package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/authconf"
	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dag"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/metrics"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/settings"

	// Cluster managers register themselves.
	_ "github.com/drover-project/drover/internal/k8s"
	_ "github.com/drover-project/drover/internal/local"
)

// Options is what a driver is assembled from.
type Options struct {
	Conf   *config.Conf
	Master master.URL
	Logger *slog.Logger
	// Console is where the progress bar and a client-mode UI's login link
	// go: the user's terminal, or a log.
	Console io.Writer
	// Clock dates the events, the certificates and start-up; the real clock
	// when nil.
	Clock clock.Clock
	// KeptLog, when set, keeps the process's output (KeepLog); Run starts
	// shipping it once the application's attempt is known.
	KeptLog *keptlog.Keeper
}

// Driver is an assembled, running driver: what the application's actions
// use. It is valid while the application function Run was given runs.
type Driver struct {
	appID     string
	attempt   master.Attempt
	conf      *config.Conf
	log       *slog.Logger
	sched     *scheduler.Scheduler
	graph     *dag.Graph
	backend   backend.SchedulerBackend
	bus       *events.Bus
	metrics   *metrics.Registry
	web       *webUI
	afterStop *afterStop
}

// AppID is the application's id.
func (d *Driver) AppID() string { return d.appID }

// Attempt is which attempt of the application this driver is.
func (d *Driver) Attempt() master.Attempt { return d.attempt }

// Conf is the application's configuration.
func (d *Driver) Conf() *config.Conf { return d.conf }

// Logger is the driver's logger, with the application's id.
func (d *Driver) Logger() *slog.Logger { return d.log }

// Scheduler is the task scheduler.
func (d *Driver) Scheduler() *scheduler.Scheduler { return d.sched }

// Graph is the application's DAG of datasets and stages.
func (d *Driver) Graph() *dag.Graph { return d.graph }

// Backend is the scheduler backend of the cluster manager.
func (d *Driver) Backend() backend.SchedulerBackend { return d.backend }

// Events is the application's event stream.
func (d *Driver) Events() *events.Bus { return d.bus }

// Metrics is the Prometheus registry the driver serves.
func (d *Driver) Metrics() *metrics.Registry { return d.metrics }

// UIURL is where the web UI is served, empty when it is not.
func (d *Driver) UIURL() string { return d.web.URL() }

// UILoginLink is a one-time login link to a web UI whose token the driver
// made; empty when there is none.
func (d *Driver) UILoginLink() string { return d.web.loginLink() }

// Store is a client of the object store spark.hadoop.fs.s3a.* configures.
func (d *Driver) Store() *objstore.Store { return objstore.New(settings.ObjectStore(d.conf)) }

// AtStop runs fn once the executors have stopped, before Run returns: a
// clean-up that must wait until no executor runs a task.
func (d *Driver) AtStop(fn func(context.Context)) { d.afterStop.add(fn) }

// App is the application: it runs with the assembled driver and ctx, which
// ends when the driver is signalled or a cluster manager fails it.
type App func(ctx context.Context, d *Driver) error

// Run assembles the driver, runs app with it and stops it. The order is
// the point: every consumer subscribes before AppStart is published; the
// cluster manager stops before the bus closes, so the executors' removals
// and AppEnd reach the consumers; the event log closes last.
func Run(parent context.Context, opts Options, app App) (err error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	conf, m, log := opts.Conf, opts.Master, opts.Logger
	// A cluster manager that finds the application cannot go on (no
	// executor can start, a pod spec the API server rejects) ends it
	// through this context.
	ctx, fail := context.WithCancelCause(parent)
	defer fail(nil)
	// drover submit names a cluster-mode driver's application, and labels
	// the driver pod with that id.
	appID := config.AppID.Get(conf)
	if appID == "" {
		appID = master.NewAppID()
	}
	log = log.With("app", appID)
	// Which attempt of the application this is: a driver its pod restarts
	// claims the next epoch and reads the credentials made for all its
	// attempts.
	attempt, err := master.NewAttempt(ctx, appID, conf, m, log)
	if err != nil {
		return err
	}
	startKeptLog(ctx, opts.KeptLog, conf, appID, attempt, log)
	security, err := newSecurity(appID, conf, m, attempt, opts.Clock.Now(), log)
	if err != nil {
		return err
	}
	// The map outputs executors of earlier attempts still hold, which they
	// name as they register, before the DAG exists.
	adoption := dag.NewAdoption()
	// 1. The bus and the event log, closed last.
	bus := events.NewBus(opts.Clock, log)
	evlog := startEventLog(ctx, conf, appID, attempt.Number(), log)
	defer func() {
		bus.Close()
		if evlog != nil {
			if err := evlog.Close(); err == nil {
				log.Info("event log written", "path", evlog.Path())
			}
		}
	}()
	defer func() {
		end := &events.AppEnd{}
		if err != nil {
			end.Err = err.Error()
		}
		bus.Publish(end)
	}()
	// 2. The progress bar and the UI, before AppStart.
	tracker := subscribeProgress(conf, bus)
	web := startUI(conf, m, log)
	defer web.stop()
	web.announceLogin(opts.Console)
	// 3. Settings checked before anything is built.
	dyn, err := dynamicAllocation(conf, m, log)
	if err != nil {
		return err
	}
	if m.Kind != master.Kubernetes {
		set, err := k8sconf.CheckUnused(conf, appID)
		if err != nil {
			return err
		}
		if len(set) > 0 {
			log.Warn("settings for Kubernetes have no effect under this master", "master", m.Raw, "keys", strings.Join(set, ","))
		}
	}
	// 4. The scheduler and the cluster manager, built together: the
	// scheduler launches on the cluster manager's backend, which reports to
	// the scheduler. The cluster manager is stopped before the bus closes,
	// so the executors' removals and AppEnd reach the consumers.
	var cluster master.Cluster
	// Executors are told the attempt they register with, and name the
	// outputs they kept from earlier ones into the adoption.
	co := backendOptions(appID, conf, security.Driver)
	co.Epoch, co.Adopt = attempt.Epoch, adoption.Add
	so := schedulerOptions(conf, m, bus, log)
	so.FirstTaskID = attempt.Epoch << 40 // task ids of two attempts never meet
	sched, err := scheduler.New(so, func(s *scheduler.Scheduler) (scheduler.Backend, error) {
		c, err := master.NewCluster(master.App{ID: appID, Master: m, Scheduler: s, Security: security, Attempt: attempt,
			Coarse: co, Events: bus, Logger: log,
			Fail: func(err error) { fail(err) }}, conf)
		if err != nil {
			return nil, err
		}
		cluster = c
		return c.Backend(), nil
	})
	if err != nil {
		return err
	}
	sweeps := &afterStop{}
	defer func() {
		if errors.Is(err, master.ErrSuperseded) {
			// A newer attempt runs the application: the executors, pods
			// and outputs are its own, not this one's to stop or delete.
			// This process only ends; its executors register with the
			// newer attempt.
			log.Warn("leaving the application to the newer attempt of the driver", "err", err)
			return
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cluster.Stop(stopCtx); err != nil {
			log.Warn("stopping the cluster manager", "err", err)
		}
		sweeps.run(stopCtx)
	}()
	// 5. The metrics and the status consumers (UI store, event log), then
	// AppStart; the DAG, built on the scheduler, hears of its lost
	// executors (dag.New registers with it) and deletes shuffles through
	// the backend.
	dm := metrics.NewDriver(metricsOptions(conf, m, appID, sched, bus), config.DynamicAllocationEnabled.Get(conf) && m.Kind != master.Local)
	capacity, handle := statusConsumer(dm.Events, web, evlog)
	bus.SubscribeBatches(statusQueue, capacity, consumerLinger, handle)
	metricsHandler := metrics.Handler(dm.Registry)
	web.Handle(metrics.Path, metricsHandler)
	web.Handle(metrics.SparkExecutorsPath, metricsHandler)
	dm.Restart.SetRestarts(int(attempt.Epoch))
	bus.Publish(&events.AppStart{AppID: appID, AttemptID: attempt.Number(), Name: config.AppName.Get(conf), Master: m.Raw, User: currentUser(),
		DeployMode: config.DeployMode.Get(conf), Conf: conf.Redacted(), DriverHost: driverHost()})
	be := cluster.Backend()
	gopts := graphOptions(conf, m, be, log)
	gopts.Lineage, gopts.Adoption = attempt.Restartable, adoption
	gopts.StageSkipped = func() { dm.Restart.StagesSkipped(1) }
	graph := dag.New(sched, gopts)
	start := opts.Clock.Now()
	// 6. Start: executors, then what acts on them.
	if err := cluster.Start(ctx); err != nil {
		return fmt.Errorf("starting %s: %w", m.Raw, err)
	}
	if err := be.WaitReady(ctx); err != nil {
		return fmt.Errorf("waiting for executors: %w", context.Cause(ctx))
	}
	log.Info("application started", "master", m.Raw, "name", config.AppName.Get(conf),
		"startup", opts.Clock.Since(start).Round(time.Millisecond))
	if attempt.Epoch > 0 {
		n := adoption.Executors()
		dm.Restart.ExecutorsAdopted(n)
		log.Info("adopted the executors of the earlier attempt", "attempt", attempt.Number(), "executors", n)
	}
	d := &Driver{appID: appID, attempt: attempt, conf: conf, log: log, sched: sched, graph: graph, backend: be, bus: bus,
		metrics: dm.Registry, web: web, afterStop: sweeps}
	if dyn != nil {
		stop, err := startDynamicAllocation(ctx, *dyn, conf, sched, graph, cluster, dm.Dynalloc, bus, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	if tracker != nil {
		defer startProgress(ctx, conf, tracker, opts.Console)()
	}
	// 7. The application.
	err = runApp(ctx, d, app)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(err, cause) {
		err = fmt.Errorf("%w (%v)", err, cause)
	}
	return err
}

// runApp runs the application's function. A panic becomes its error, with
// the stack, so the driver still stops its executors and deletes its pods.
func runApp(ctx context.Context, d *Driver, app App) (err error) {
	defer func() {
		if r := recover(); r != nil {
			// The stack goes to the log first, so the message stays the
			// last line, where submit and kubectl show it.
			d.log.Error("the application panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("the application panicked: %v", r)
		}
	}()
	return app(ctx, d)
}

// newSecurity loads the credentials made for every attempt of a driver
// that may restart, else makes this driver's own.
func newSecurity(appID string, conf *config.Conf, m master.URL, a master.Attempt, now time.Time, log *slog.Logger) (master.Security, error) {
	if !a.Credentials.IsZero() {
		return master.LoadSecurity(appID, a.Credentials, log)
	}
	o, err := authconf.Security(conf, m)
	if err != nil {
		return master.Security{}, err
	}
	return master.NewSecurity(appID, o, m, now, log)
}
