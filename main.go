package drover

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dag"
	"github.com/drover-project/drover/internal/dynalloc"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/metrics"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/progress"
	"github.com/drover-project/drover/internal/scheduler"

	// Cluster managers register themselves.
	"github.com/drover-project/drover/internal/k8s"
	_ "github.com/drover-project/drover/internal/local"
)

// Context is the driver's handle on the running application. It is also a
// context.Context, cancelled on SIGINT or SIGTERM.
type Context struct {
	context.Context
	appID   string
	conf    *config.Conf
	args    []string
	log     *slog.Logger
	sched   *scheduler.Scheduler
	graph   *dag.Graph
	cluster master.Cluster
	metrics *metrics.Registry
	events  *events.Bus
	// web serves the UI and the metrics; nil when spark.ui.enabled is
	// false or it could not start.
	web  *webUI
	jobs atomic.Int64
	// tracking is spark.cleaner.referenceTracking: datasets the program
	// dropped are forgotten, with their shuffles' files.
	tracking bool
	// afterStop runs once the executors are stopped.
	afterStop *afterStop
}

// afterStop holds clean-ups that must wait until no executor runs a task:
// a failed job's output prefix is swept again then, because an attempt the
// failure killed may have started an upload after the first sweep.
type afterStop struct {
	mu  sync.Mutex
	fns []func(context.Context)
}

func (a *afterStop) add(fn func(context.Context)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fns = append(a.fns, fn)
}

func (a *afterStop) run(ctx context.Context) {
	a.mu.Lock()
	fns := a.fns
	a.fns = nil
	a.mu.Unlock()
	for _, fn := range fns {
		fn(ctx)
	}
}

// AppID is the application's id.
func (c *Context) AppID() string { return c.appID }

// UIWebURL is where the driver serves its web UI and REST API, as Spark's
// SparkContext.uiWebUrl; empty when spark.ui.enabled is false or the UI
// could not start.
func (c *Context) UIWebURL() string { return c.web.URL() }

// Args are the program's arguments after drover's own flags.
func (c *Context) Args() []string { return c.args }

// Conf returns a configuration value (explicit or default).
func (c *Context) Conf(key string) string { return c.conf.Get(key) }

// Logger is the driver's logger.
func (c *Context) Logger() *slog.Logger { return c.log }

// Metrics is the driver's Prometheus registry: the metrics the driver serves
// (docs/metrics.md).
func (c *Context) Metrics() prometheus.Gatherer { return c.metrics }

// DefaultParallelism is spark.default.parallelism, or the executors' cores.
func (c *Context) DefaultParallelism() int { return c.cluster.Backend().DefaultParallelism() }

// RunPartitions runs f once per input, each as a task on an executor, and
// returns the outputs in input order. A task that fails
// spark.task.maxFailures times fails the job with the task's error (a
// panic's message and stack included).
func RunPartitions[In, Out any](c *Context, f *Func[In, Out], inputs []In) ([]Out, error) {
	if f.err != nil {
		return nil, f.err
	}
	if _, ok := funcs.Lookup(f.name); !ok {
		return nil, fmt.Errorf("function %q is not registered", f.name)
	}
	tasks := make([]scheduler.TaskSpec, len(inputs))
	for i, in := range inputs {
		b, err := codec.Encode(in)
		if err != nil {
			return nil, fmt.Errorf("encoding input of partition %d: %w", i, err)
		}
		tasks[i] = scheduler.TaskSpec{Partition: i, Payload: b}
	}
	raw := make([][]byte, len(inputs))
	var job int64
	err := c.job(func(ctx context.Context) error {
		job = events.JobOf(ctx)
		return c.sched.Run(ctx, scheduler.TaskSetSpec{
			JobID:     job,
			StageID:   c.graph.NewStageID(),
			Func:      f.name,
			Name:      "RunPartitions " + f.name,
			Tasks:     tasks,
			OnSuccess: func(p int, r []byte) { raw[p] = r },
		})
	})
	if err != nil {
		return nil, fmt.Errorf("job %d (%s): %w", job, f.name, err)
	}
	out := make([]Out, len(inputs))
	for i, b := range raw {
		if out[i], err = codec.Decode[Out](b); err != nil {
			return nil, fmt.Errorf("decoding result of partition %d: %w", i, err)
		}
	}
	return out, nil
}

// Main runs the program in the role its environment gives it: as an
// executor when a cluster manager started it as one, otherwise as the
// driver of run. It does not return: the process exits with run's outcome.
//
// As the driver, Main reads drover's flags before the program's own
// arguments, the way spark-submit does: --master, --name, --conf key=value
// (repeatable), --properties-file and --deploy-mode.
func Main(run func(ctx *Context) error) {
	funcs.Freeze()
	if os.Getenv(envvar.Role) == envvar.RoleExecutor {
		os.Exit(runExecutor())
	}
	os.Exit(runDriver(os.Args[1:], os.Stderr, run))
}

// Run is Main for tests and for programs that start drover jobs
// themselves: it runs run as the driver, with args in place of the command
// line (drover's flags, then the program's arguments), logs to stderr, and
// returns the exit code Main would exit with. A process that may be started
// as an executor must still call Main first (in main, or in TestMain).
func Run(args []string, stderr io.Writer, run func(ctx *Context) error) int {
	funcs.Freeze()
	return runDriver(args, stderr, run)
}

func runExecutor() int {
	log, err := logging.New(os.Stderr, os.Getenv(envvar.LogLevel), os.Getenv(envvar.LogFormat))
	if err != nil {
		log = slog.Default()
	}
	opts, err := executor.OptionsFromEnv(os.Getenv)
	if err != nil {
		log.Error(err.Error())
		return 2
	}
	opts.Logger = log
	opts.StoreRetries = objstore.TakeRetries
	// The Go counterpart of -Xmx and --cores: near its memory setting the
	// collector works harder instead of the pod being OOM-killed.
	if opts.MemoryBytes > 0 {
		debug.SetMemoryLimit(opts.MemoryBytes)
	}
	if opts.Cores > 0 {
		runtime.GOMAXPROCS(opts.Cores)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := executor.Run(ctx, opts); err != nil {
		log.Error("executor exiting", "err", err)
		return 1
	}
	return 0
}

type pairs []string

func (p *pairs) String() string     { return strings.Join(*p, ",") }
func (p *pairs) Set(v string) error { *p = append(*p, v); return nil }

// driverFlags are drover's flags before the program's arguments.
type driverFlags struct {
	conf           pairs
	propertiesFile string
	overrides      map[string]string
	args           []string
}

func parseDriverFlags(args []string, stderr io.Writer) (*driverFlags, error) {
	df := &driverFlags{overrides: map[string]string{}}
	fs := flag.NewFlagSet("drover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var masterURL, name, deployMode string
	fs.StringVar(&masterURL, "master", "", "master URL: local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port")
	fs.StringVar(&name, "name", "", "application name (spark.app.name)")
	fs.StringVar(&deployMode, "deploy-mode", "", "client or cluster (spark.submit.deployMode)")
	fs.Var(&df.conf, "conf", "configuration key=value; repeatable")
	fs.StringVar(&df.propertiesFile, "properties-file", "", "file of configuration properties (key value per line)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [drover flags] [program arguments]\n\ndrover flags:\n", os.Args[0])
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for k, v := range map[string]string{"spark.master": masterURL, "spark.app.name": name, "spark.submit.deployMode": deployMode} {
		if v != "" {
			df.overrides[k] = v
		}
	}
	df.args = fs.Args()
	return df, nil
}

func runDriver(args []string, stderr io.Writer, run func(*Context) error) int {
	df, err := parseDriverFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	// A cluster-mode driver reads the configuration drover submit mounted
	// (a process node in tests says where it put it).
	propsFile := podspec.LocalConfFile(df.propertiesFile, os.Getenv)
	// A cluster-mode driver's sensitive settings are in drover submit's
	// Secret, beside its properties file.
	var secretsFile string
	if df.propertiesFile == podspec.DriverConfFile {
		secretsFile = podspec.LocalConfFile(podspec.DriverSecretFile, os.Getenv)
	}
	conf, warnings, err := config.Load(config.Sources{PropertiesFile: propsFile, SecretsFile: secretsFile, Pairs: df.conf, Overrides: df.overrides})
	if err != nil {
		fmt.Fprintf(stderr, "drover: %v\n", err)
		return config.ExitInvalid
	}
	log, err := logging.New(stderr, config.LogLevel.Get(conf), config.LogFormat.Get(conf))
	if err != nil {
		fmt.Fprintf(stderr, "drover: %v\n", err)
		return 2
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	m, err := master.Parse(masterOrDefault(conf))
	if err != nil {
		fmt.Fprintf(stderr, "drover: %v\n", config.Invalid(err))
		return config.ExitInvalid
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := drive(ctx, conf, m, df.args, log, stderr, run); err != nil {
		fmt.Fprintf(stderr, "drover: %v\n", err)
		if errors.Is(err, config.ErrInvalid) {
			return config.ExitInvalid
		}
		return 1
	}
	return 0
}

// masterOrDefault is spark.master, or local[*] as with spark-submit.
func masterOrDefault(c *config.Conf) string {
	if m := config.Master.Get(c); m != "" {
		return m
	}
	return "local[*]"
}

func drive(parent context.Context, conf *config.Conf, m master.URL, args []string, log *slog.Logger, console io.Writer, run func(*Context) error) (err error) {
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
	security, err := master.NewSecurity(appID, conf, m, time.Now(), log)
	if err != nil {
		return err
	}
	// Every consumer subscribes before the first event: the stream starts
	// with AppStart. Closed last, after the cluster manager stopped, so
	// the executors' removals reach the consumers.
	bus := events.NewBus(clock.RealClock{}, log)
	evlog := startEventLog(ctx, conf, appID, log)
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
	var tracker *progress.Tracker
	if config.ShowConsoleProgress.Get(conf) {
		tracker = &progress.Tracker{}
		bus.Subscribe("progress", 0, tracker.Handle)
	}
	maxFailures := config.TaskMaxFailures.Get(conf)
	if m.Kind == master.Local {
		maxFailures = m.MaxFailures
	}
	var graph *dag.Graph
	var cluster master.Cluster
	sched := scheduler.New(scheduler.Options{
		MaxFailures:   maxFailures,
		CPUsPerTask:   config.TaskCPUs.Get(conf),
		MaxResultSize: config.DriverMaxResultSize.Get(conf),
		MaxTaskSize:   config.RPCMessageMaxSize.Get(conf),
		ExecutorLost:  func(id executorid.ID) { graph.ExecutorLost(id) },
		Events:        bus,
		Logger:        log,
	})
	mo := metrics.Options{AppID: appID, AppName: config.AppName.Get(conf), TaskCPUs: config.TaskCPUs.Get(conf),
		Backlog: sched, Bus: bus}
	if m.Kind == master.Local {
		mo.LocalCores = m.Threads
	}
	dm := metrics.NewDriver(mo, config.DynamicAllocationEnabled.Get(conf) && m.Kind != master.Local)
	web := startUI(conf, log)
	defer web.stop()
	web.announceLogin(console)
	capacity, handle := statusConsumer(dm.Events, web, evlog)
	bus.SubscribeBatches(statusQueue, capacity, consumerLinger, handle)
	metricsHandler := metrics.Handler(dm.Registry)
	web.Handle(metrics.Path, metricsHandler)
	web.Handle(metrics.SparkExecutorsPath, metricsHandler)
	bus.Publish(&events.AppStart{AppID: appID, Name: config.AppName.Get(conf), Master: m.Raw, User: currentUser(),
		DeployMode: config.DeployMode.Get(conf), Conf: conf.Redacted(), DriverHost: driverHost()})
	graph = dag.New(sched, dag.Options{
		MaxStageAttempts: config.StageMaxConsecutiveAttempts.Get(conf),
		MemoryBytes:      taskMemory(conf, m),
		MaxInFlight:      config.ReducerMaxSizeInFlight.Get(conf),
		RemoveShuffles:   func(ids []int) { cluster.Backend().RemoveShuffles(ids) },
		Logger:           log,
	})
	// Dynamic allocation's settings are checked before anything starts.
	var dyn *dynalloc.Config
	if config.DynamicAllocationEnabled.Get(conf) {
		if m.Kind == master.Local {
			log.Warn("spark.dynamicAllocation.enabled has no effect in local mode: its task slots are fixed")
		} else {
			limit := 0
			if m.Kind == master.LocalCluster {
				limit = m.Executors
			}
			cfg, err := dynalloc.FromConf(conf, limit)
			if err != nil {
				return config.Invalid(fmt.Errorf("dynamic allocation: %w", err))
			}
			dyn = &cfg
		}
	}
	if m.Kind != master.Kubernetes {
		set, err := k8s.CheckUnused(conf, appID)
		if err != nil {
			return err
		}
		if len(set) > 0 {
			log.Warn("settings for Kubernetes have no effect under this master", "master", m.Raw, "keys", strings.Join(set, ","))
		}
	}
	cluster, err = master.NewCluster(master.App{ID: appID, Conf: conf, Master: m, Scheduler: sched, Security: security, Events: bus, Logger: log,
		Fail: func(err error) { fail(err) }})
	if err != nil {
		return err
	}
	sched.SetBackend(cluster.Backend())
	start := time.Now()
	sweeps := &afterStop{}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cluster.Stop(stopCtx); err != nil {
			log.Warn("stopping the cluster manager", "err", err)
		}
		sweeps.run(stopCtx)
	}()
	if err := cluster.Start(ctx); err != nil {
		return fmt.Errorf("starting %s: %w", m.Raw, err)
	}
	if err := cluster.Backend().WaitReady(ctx); err != nil {
		return fmt.Errorf("waiting for executors: %w", context.Cause(ctx))
	}
	log.Info("application started", "master", m.Raw, "name", config.AppName.Get(conf), "startup", time.Since(start).Round(time.Millisecond))
	c := &Context{Context: ctx, appID: appID, conf: conf, args: args, log: log, sched: sched, graph: graph, cluster: cluster,
		metrics: dm.Registry, events: bus, web: web, tracking: config.CleanerReferenceTracking.Get(conf), afterStop: sweeps}
	if dyn != nil {
		stop, err := startDynamicAllocation(ctx, *dyn, conf, sched, graph, cluster, dm.Dynalloc, bus, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	if tracker != nil {
		progressCtx, stopProgress := context.WithCancel(ctx)
		reporter := &progress.Reporter{W: console, Terminal: isTerminal(console), Interval: config.ProgressInterval.Get(conf),
			Source: tracker.Stages, Waiting: tracker.Waiting}
		done := make(chan struct{})
		go func() { reporter.Run(progressCtx); close(done) }()
		defer func() { stopProgress(); <-done }()
	}
	err = runApp(c, run)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(err, cause) {
		err = fmt.Errorf("%w (%v)", err, cause)
	}
	return err
}

// startEventLog starts the event log when spark.eventLog.enabled; the
// status consumer feeds it. A log that cannot be created is reported, and
// the application runs without it, as it does when writing fails later.
func startEventLog(ctx context.Context, conf *config.Conf, appID string, log *slog.Logger) *eventlog.Writer {
	opts, enabled := eventlog.FromConf(conf, appID)
	if !enabled {
		return nil
	}
	if objstore.HasScheme(opts.Dir) {
		opts.Store = objstore.New(objstore.ConfigFrom(conf))
	}
	opts.Logger = log
	w, err := eventlog.Start(ctx, opts)
	if err != nil {
		log.Error("the application runs without its event log", "err", err)
		return nil
	}
	log.Info("writing the event log", "path", w.Path())
	return w
}

// runApp runs the application's function. A panic becomes its error, with
// the stack, so the driver still stops its executors and deletes its pods.
func runApp(c *Context, run func(*Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			// The stack goes to the log first, so the message stays the
			// last line, where submit and kubectl show it.
			c.log.Error("the application panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("the application panicked: %v", r)
		}
	}()
	return run(c)
}

// startDynamicAllocation runs the allocation policy until the returned
// function is called.
func startDynamicAllocation(ctx context.Context, cfg dynalloc.Config, conf *config.Conf, sched *scheduler.Scheduler,
	graph *dag.Graph, cluster master.Cluster, metrics *dynalloc.Metrics, events *events.Bus, log *slog.Logger) (func(), error) {
	client := cluster.Allocation()
	if client == nil {
		return nil, errors.New("dynamic allocation: this cluster manager cannot add or remove executors")
	}
	m := &dynalloc.Manager{
		Config:       cfg,
		Tasks:        sched,
		Client:       client,
		Executors:    client.ExecutorIDs,
		Exclude:      client.ExcludeExecutor,
		Shuffles:     graph.ShuffleHolders,
		Decommission: config.DecommissionEnabled.Get(conf),
		Logger:       log,
		Metrics:      metrics,
		Events:       events,
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { m.Run(runCtx); close(done) }()
	log.Info("dynamic allocation started", "min", cfg.Min, "max", cfg.Max, "initial", cfg.Initial,
		"idleTimeout", cfg.IdleTimeout)
	return func() { cancel(); <-done }, nil
}

// taskMemory is each task's share of its executor's memory for shuffle
// buffers, aggregation and sorting before they spill to disk:
// spark.memory.fraction of the executor's memory divided among its cores.
func taskMemory(conf *config.Conf, m master.URL) int64 {
	mem, cores := config.ExecutorMemory.Get(conf), int64(config.ExecutorCores.Get(conf))
	switch m.Kind {
	case master.Local:
		mem, cores = config.DriverMemory.Get(conf), int64(m.Threads)
	case master.LocalCluster:
		mem, cores = int64(m.MemoryMiB)<<20, int64(m.CoresPerExecutor)
	}
	return int64(float64(mem)*config.MemoryFraction.Get(conf)) / max(1, cores)
}

// isTerminal reports whether w is a character device: a progress bar can
// be redrawn in place there, not in a log file or pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func isFrozen(err error) bool { return errors.Is(err, funcs.ErrFrozen) }

// currentUser is who runs the driver, as Spark's sparkUser: the login
// name, else $USER.
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// driverHost is the driver's host name: its pod's name on Kubernetes
// (which a process node, running pods as processes, does not make the
// host name).
func driverHost() string {
	if pod := os.Getenv(envvar.DriverPodName); pod != "" {
		return pod
	}
	h, _ := os.Hostname()
	return h
}
