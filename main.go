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
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dag"
	"github.com/drover-project/drover/internal/driver"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/scheduler"
)

// Context is the driver's handle on the running application. It is also a
// context.Context, cancelled on SIGINT or SIGTERM.
type Context struct {
	context.Context
	// d is the assembled driver (internal/driver); the fields below are
	// its parts the datasets and actions use most.
	d       *driver.Driver
	appID   string
	conf    *config.Conf
	args    []string
	log     *slog.Logger
	sched   *scheduler.Scheduler
	graph   *dag.Graph
	backend backend.SchedulerBackend
	events  *events.Bus
	jobs    atomic.Int64
	// tracking is spark.cleaner.referenceTracking: datasets the program
	// dropped are forgotten, with their shuffles' files.
	tracking bool
	// commitHook is the Save actions' commit.Options.Hook (tests).
	commitHook func(completed int) error
}

func newContext(ctx context.Context, d *driver.Driver, args []string) *Context {
	return &Context{Context: ctx, d: d, appID: d.AppID(), conf: d.Conf(), args: args, log: d.Logger(), sched: d.Scheduler(),
		graph: d.Graph(), backend: d.Backend(), events: d.Events(), tracking: config.CleanerReferenceTracking.Get(d.Conf())}
}

// AppID is the application's id.
func (c *Context) AppID() string { return c.appID }

// UIWebURL is where the driver serves its web UI and REST API, as Spark's
// SparkContext.uiWebUrl; empty when spark.ui.enabled is false or the UI
// could not start.
func (c *Context) UIWebURL() string { return c.d.UIURL() }

// Args are the program's arguments after drover's own flags.
func (c *Context) Args() []string { return c.args }

// Conf returns a configuration value (explicit or default).
func (c *Context) Conf(key string) string { return c.conf.Get(key) }

// Logger is the driver's logger.
func (c *Context) Logger() *slog.Logger { return c.log }

// AttemptID is the driver's attempt, as Spark's applicationAttemptId: "1"
// for the first run of a driver that may restart in its pod
// (spark.kubernetes.driver.restartPolicy=OnFailure), "2" after its first
// restart; "" for a driver that cannot restart. main runs again from the
// start in each attempt; what earlier attempts computed and committed is
// not done again.
func (c *Context) AttemptID() string { return c.d.Attempt().Number() }

// Metrics is the driver's Prometheus registry: the metrics the driver serves
// (docs/metrics.md).
func (c *Context) Metrics() prometheus.Gatherer { return c.d.Metrics() }

// DefaultParallelism is spark.default.parallelism, or the executors' cores.
func (c *Context) DefaultParallelism() int { return c.backend.DefaultParallelism() }

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
	keeper, stderr := executor.KeepLog(os.Getenv, os.Stderr)
	defer closeKeptLog(keeper)
	log, err := logging.New(stderr, os.Getenv(envvar.LogLevel), os.Getenv(envvar.LogFormat))
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
	opts.StoreReady = executor.StartKeptLog(keeper, opts, os.Getenv, log)
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
	if ctx.Err() != nil {
		// Stopped by SIGTERM, after decommissioning: exit as a process the
		// signal ended. With 0 the kubelet reports an evicted pod as
		// Succeeded, without the eviction's reason, and the driver could
		// not name it (seen on a real kubelet, issue 42).
		log.Info("executor stopped by SIGTERM", "exitCode", exitSIGTERM)
		return exitSIGTERM
	}
	return 0
}

// exitSIGTERM is the exit code of a process SIGTERM ended (128+15), as a
// JVM executor's is.
const exitSIGTERM = 143

// closeKeptLog ships the rest of the process's kept log before it exits
// (at the end of its work, or on SIGTERM), within the pod's usual grace.
func closeKeptLog(k *keptlog.Keeper) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.Close(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "drover: the end of this process's kept log was not shipped: %v\n", err)
	}
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
	conf, warnings, err := driver.LoadConf(df.propertiesFile, df.conf, df.overrides, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "drover: %v\n", err)
		return config.ExitInvalid
	}
	keeper, stderr, err := driver.KeepLog(conf, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "drover: %v\n", err)
		return config.ExitInvalid
	}
	defer closeKeptLog(keeper)
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
	if err := drive(ctx, driver.Options{Conf: conf, Master: m, Logger: log, Console: stderr, KeptLog: keeper}, df.args, run); err != nil {
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

// drive runs the application as the driver assembled from conf.
func drive(ctx context.Context, opts driver.Options, args []string, run func(*Context) error) error {
	return driver.Run(ctx, opts,
		func(ctx context.Context, d *driver.Driver) error { return run(newContext(ctx, d, args)) })
}

func isFrozen(err error) bool { return errors.Is(err, funcs.ErrFrozen) }
