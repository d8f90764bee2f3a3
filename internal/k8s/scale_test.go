//go:build integration

package k8s

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/authconf"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dag"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/metrics"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/settings"
	"github.com/drover-project/drover/internal/testenv"
)

// The scale benchmarks run on a real control plane with kwok nodes: pods
// are scheduled by kube-scheduler and "run" on kwok, and each Running pod
// gets an executor simulated in this process that registers with the
// driver over the real RPC, like the executor in a real pod would. The
// driver is a process of its own, so its CPU time and peak resident
// memory (driver-cpu-s, driver-peak-rss-MiB) are its alone. Each
// benchmark's ns/op is the time until every executor registered (or, for
// the raw baseline, every pod runs); setup and teardown are not counted.
//
//	DROVER_SCALE_N=1000 go test -run '^$' -bench '^BenchmarkAllocation' -benchtime 1x -timeout 25m ./internal/k8s/
//
// DROVER_SCALE_N is the number of executors (default 1000; the control
// plane gets a kwok node per 250 of them; past 5,000 the simulated
// executors run in child processes of 5,000, see executorsPerHost);
// DROVER_SCALE_HOLD is how long the application stays up after all
// executors registered (default 35s, more than Spark's 30 s
// apiPollingInterval) to check that no LIST runs while the watch is
// healthy. DROVER_SCALE_CONF adds driver configuration for experiments
// ("key=value,key=value"); DROVER_SCALE_LOG=1 with -v prints the driver's
// debug log; DROVER_SCALE_TRACE=1 timestamps requests, pods and executors
// (scaleTrace); DROVER_SCALE_PROFILE=/path/prefix writes the driver's CPU
// profile and, once all executors registered, its heap profile and memory
// summary (prefix.policy.cpu, prefix.policy.heap, prefix.policy.mem), and after the stop
// prefix.policy.stop.heap. DROVER_SCALE_STAGES=general gives pods kwok's realistic start
// latency (1 s + up to 5 s) instead of "fast". Without the Kubernetes
// test binaries they skip, unless CI=true.
var scaleEnv = &testenv.Shared{Options: testenv.Options{Scheduler: true, ControllerManager: true,
	KwokNodes: kwokNodesFor(scaleN()), KwokStages: os.Getenv("DROVER_SCALE_STAGES"), AuditPodCreates: true}}

// kwokNodesFor is how many kwok nodes hold n executor pods with room to
// spare (each takes 250 pods): at least 6, so the other tests' pods fit.
// Past 5,000 they hold twice n: deleting 10,000 pods outlasts the next
// benchmark's start, whose pods found every node full.
func kwokNodesFor(n int) int {
	if n > 5000 {
		n *= 2
	}
	return max(6, (n+249)/250+2)
}

// init makes this test binary also the executor, driver and executor-host
// processes the integration tests start, and stops their shared control
// planes after the tests (TestMain, main_test.go).
func init() {
	binaryModes = append(binaryModes, func() (bool, int) {
		if os.Getenv(envvar.Role) == envvar.RoleExecutor {
			return true, executorMain()
		}
		if p := os.Getenv(driverEnv); p != "" {
			if err := driverMain(p); err != nil {
				fmt.Fprintln(os.Stderr, "driver:", err)
				return true, 1
			}
			return true, 0
		}
		if p := os.Getenv(execHostEnv); p != "" {
			if err := execHostMain(p); err != nil {
				fmt.Fprintln(os.Stderr, "executor host:", err)
				return true, 1
			}
			return true, 0
		}
		return false, 0
	})
	afterTests = append(afterTests, func() {
		_ = scaleEnv.Stop()
		_ = queueEnv.Stop()
		_ = queueBenchEnv.Stop()
		_ = podEnv.Stop()
	})
}

func scaleN() int {
	if n, err := strconv.Atoi(os.Getenv("DROVER_SCALE_N")); err == nil && n > 0 {
		return n
	}
	return 1000
}

func scaleHold() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("DROVER_SCALE_HOLD")); err == nil && d >= 0 {
		return d
	}
	return 35 * time.Second
}

// requestCounter counts the driver's API requests by verb: LIST for a
// plain list, WATCHLIST for a watch that streams the initial state (how
// client-go 1.35+ informers list), WATCH for a watch that resumes.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
	// lists counts the LIST and WATCHLIST requests since started was set.
	started atomic.Bool
	lists   atomic.Int64
}

// wrap is the driver's transport wrapper: it counts on r what next
// carries. Each transport the driver wraps keeps its own next, so a
// driver with more than one keeps each request on its own transport.
func (r *requestCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return countingTransport{r, next}
}

type countingTransport struct {
	*requestCounter
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := t.requestCounter
	verb := req.Method
	q := req.URL.Query()
	switch {
	case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
		verb = "WATCHLIST"
	case q.Get("watch") == "true":
		verb = "WATCH"
	case req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods"):
		verb = "LIST"
	}
	if (verb == "LIST" || verb == "WATCHLIST") && r.started.Load() {
		r.lists.Add(1)
	}
	r.mu.Lock()
	r.n[verb]++
	r.mu.Unlock()
	if scaleTrace {
		t0 := time.Now()
		resp, err := t.next.RoundTrip(req)
		trace(t0, time.Now(), "driver", verb+" "+req.URL.Path)
		return resp, err
	}
	return t.next.RoundTrip(req)
}

// scaleTrace is DROVER_SCALE_TRACE: trace writes, to stderr, one line per
// driver request (sent past client-go's rate limiter, and answered), per
// pod seen Running and per simulated executor started, and the start of
// each timed run, for a breakdown of where a run's time goes:
//
//	TRACE <start, Unix µs> <end, Unix µs, or 0> <what> <detail>
//
// Driver lines come from the driver process: run with -v and
// DROVER_SCALE_LOG=1, whose debug log adds the allocator's rounds and
// the registrations.
var scaleTrace = os.Getenv("DROVER_SCALE_TRACE") != ""

func trace(start, end time.Time, what, detail string) {
	if !scaleTrace {
		return
	}
	var e int64
	if !end.IsZero() {
		e = end.UnixMicro()
	}
	fmt.Fprintf(os.Stderr, "TRACE %d %d %s %s\n", start.UnixMicro(), e, what, detail)
}

func (r *requestCounter) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]int, len(r.n))
	for k, v := range r.n {
		m[k] = v
	}
	return m
}

func writes(m map[string]int) int {
	return m[http.MethodPost] + m[http.MethodPut] + m[http.MethodPatch] + m[http.MethodDelete]
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// apiserverRequests is what the API server served for the given
// resources (testenv.Env.APIServerRequests), by "VERB
// resource[/subresource]": every client of the control plane (the driver,
// kube-scheduler's bindings, kwok's status updates, the controller
// manager).
func apiserverRequests(b testing.TB, env *testenv.Env, resources ...string) testenv.Requests {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := env.APIServerRequests(ctx, resources...)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// podWatcher follows the namespace's pods: it records the peak number of
// pods not yet running and calls onRunning once per pod that runs.
type podWatcher struct {
	peakPending atomic.Int64
	running     atomic.Int64
	stop        chan struct{}

	mu            sync.Mutex
	pending       int
	unschedulable string          // the scheduler's last Unschedulable message
	seen          map[string]bool // every pod name seen, running or not
	bound         map[string]bool // pods seen bound to a node (for DROVER_SCALE_TRACE)
}

// names returns every pod name the watcher has seen.
func (w *podWatcher) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Collect(maps.Keys(w.seen))
}

func watchPods(b testing.TB, env *testenv.Env, ns string, onRunning func(*corev1.Pod)) *podWatcher {
	w := &podWatcher{stop: make(chan struct{}), seen: map[string]bool{}, bound: map[string]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	state := w.seen // pod → running
	update := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		w.mu.Lock()
		wasRunning, known := state[p.Name]
		isRunning := p.Status.Phase == corev1.PodRunning
		if scaleTrace {
			if !known {
				trace(time.Now(), time.Time{}, "seen", p.Name)
			}
			if p.Spec.NodeName != "" && !w.bound[p.Name] {
				w.bound[p.Name] = true
				trace(time.Now(), time.Time{}, "bound", p.Name)
			}
		}
		state[p.Name] = isRunning || wasRunning
		pending := 0
		for _, r := range state {
			if !r {
				pending++
			}
		}
		w.pending = pending
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
				w.unschedulable = p.Name + ": " + c.Message
			}
		}
		w.mu.Unlock()
		if int64(pending) > w.peakPending.Load() {
			w.peakPending.Store(int64(pending))
		}
		if isRunning && (!known || !wasRunning) {
			trace(time.Now(), time.Time{}, "running", p.Name)
			w.running.Add(1)
			if onRunning != nil {
				onRunning(p)
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: update, UpdateFunc: func(_, o any) { update(o) }}); err != nil {
		b.Fatal(err)
	}
	f.Start(w.stop)
	f.WaitForCacheSync(w.stop)
	b.Cleanup(func() { close(w.stop); f.Shutdown() })
	return w
}

// progress logs every 30 s how far the run is, so a run that stalls says
// why (an Unschedulable pod names the missing resource) instead of hanging
// silently until the test binary's timeout.
func (w *podWatcher) progress(b testing.TB) (stop func()) {
	done := make(chan struct{})
	start := time.Now()
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			w.mu.Lock()
			pending, unsched := w.pending, w.unschedulable
			w.mu.Unlock()
			b.Logf("after %s: %d pods running, %d not yet; last unschedulable: %q",
				time.Since(start).Round(time.Second), w.running.Load(), pending, unsched)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

func kwokTemplate(b testing.TB) string {
	path := b.TempDir() + "/kwok-template.yaml"
	tmpl := fmt.Sprintf(`apiVersion: v1
kind: Pod
spec:
  nodeSelector:
    %s: "true"
  tolerations:
  - key: %s
    operator: Equal
    value: %s
    effect: NoSchedule
`, testenv.KwokNodeLabel, testenv.KwokToleration.Key, testenv.KwokToleration.Value)
	if err := os.WriteFile(path, []byte(tmpl), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// scaleRun is one application's figures.
type scaleRun struct {
	driverResult
	// podCreates counts the executor pods the API server stored for the
	// driver (its audit log), created their names; podCreatesRefused the
	// other create requests (a resend answered AlreadyExists, a quota).
	podCreates, podCreatesRefused int
	created                       []string
	stderr                        string // the driver's log
	peakPending                   int64
	apiserver                     map[string]int   // apiserver_request_total during the ramp-up
	cpu                           time.Duration    // the driver process's CPU time over its life
	peakRSS                       int64            // the driver process's peak resident set, bytes
	victims                       []hostedExecutor // the executors killed in the job
}

func benchmarkAllocation(b *testing.B, policy string) {
	env := scaleEnv.Env(b)
	n := scaleN()
	hold := scaleHold()
	var runs []scaleRun
	for b.Loop() {
		runs = append(runs, allocationRun(b, env, allocation{policy: policy, n: n, hold: hold}))
	}
	var total, cpuReady, cpu time.Duration
	var peak, lists, rss, rssReady int64
	var w int
	for _, r := range runs {
		rssReady = max(rssReady, r.PeakRSSToReady)
		total += r.Elapsed
		cpuReady += r.CPUToReady
		cpu += r.cpu
		peak = max(peak, r.peakPending)
		rss = max(rss, r.peakRSS)
		lists += r.ListsAfter
		w = max(w, writes(r.Driver))
	}
	k := float64(len(runs))
	b.ReportMetric(float64(total.Nanoseconds())/k, "ns/op")
	b.ReportMetric(total.Seconds()/k, "s-to-registered")
	b.ReportMetric(float64(peak), "peak-pending")
	b.ReportMetric(float64(w)/float64(n), "writes/executor")
	b.ReportMetric(float64(lists), "lists-after-start")
	b.ReportMetric(cpuReady.Seconds()/k, "driver-cpu-s-to-registered")
	b.ReportMetric(cpu.Seconds()/k, "driver-cpu-s")
	b.ReportMetric(float64(rss)/(1<<20), "driver-peak-rss-MiB")
	b.ReportMetric(float64(rssReady)/(1<<20), "driver-peak-rss-to-registered-MiB")
	b.ReportMetric(float64(runs[len(runs)-1].podCreates), "pod-creates")
}

// The driver runs in a process of its own (this test binary started again
// with driverEnv set), so its CPU time and peak memory are measured apart
// from the simulated executors, the pod watcher and the benchmark.
const driverEnv = "DROVER_SCALE_DRIVER"

// driverParams is what the driver process is told, as JSON in driverEnv.
type driverParams struct {
	Namespace, Policy, APIServer, Template string
	N                                      int
	Hold                                   time.Duration
	// LogInfo writes the driver's info log to its stderr (the fault tests
	// read it); benchmarks keep the driver silent.
	LogInfo bool
	// Job, if set, is run once every executor registered, instead of the
	// hold (BenchmarkScaleJob).
	Job *scaleJobParams
}

// driverResult is what the driver process reports on its last line.
type driverResult struct {
	Elapsed    time.Duration // from Start until every executor registered
	CPUToReady time.Duration // the process's CPU time until then, start-up included
	// PeakRSSToReady is the process's peak resident set until then, in
	// bytes: the peak over its life (scaleRun.peakRSS) includes the stop,
	// when every executor's pod is deleted and its connection closed.
	PeakRSSToReady int64
	Driver         map[string]int // the driver's requests over its life, by verb
	ListsAfter     int64          // LIST or WATCHLIST after Start returned
	HoldWrites     int            // writes while the application idled
	Registered     int
	Job            *scaleJobResult
}

// driverMain is the driver process: it prints "url <driver URL>" once it
// started (its RPC server listens), "ready" when every executor registered, and
// "result <JSON driverResult>" after it stopped.
func driverMain(raw string) error {
	var p driverParams
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return fmt.Errorf("reading %s: %w", driverEnv, err)
	}
	counter := &requestCounter{n: map[string]int{}}
	conf := scaleConf(p)
	log := slog.New(slog.DiscardHandler)
	if p.LogInfo {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if os.Getenv("DROVER_SCALE_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// The job's graph forgets the map outputs of lost executors.
	var graph atomic.Pointer[dag.Graph]
	schedOpts := scheduler.Options{MaxFailures: 4, ExecutorLost: func(id executorid.ID) {
		if g := graph.Load(); g != nil {
			g.ExecutorLost(id)
		}
	}}
	failed := make(chan error, 1)
	app := master.App{ID: "drover-scale-" + p.Policy, Logger: log,
		Master: mustParseMaster("k8s://" + p.APIServer),
		Fail: func(err error) {
			select {
			case failed <- err:
			default:
			}
		}}
	// Authentication as a driver has it by default (mutual TLS), unless
	// DROVER_SCALE_CONF turns it off for comparison.
	so, err := authconf.Security(conf, app.Master)
	if err != nil {
		return err
	}
	if app.Security, err = master.NewSecurity(app.ID, so, app.Master, time.Now(), log); err != nil {
		return err
	}
	// DROVER_SCALE_OBSERVE=1 gives the driver what drive() gives it by
	// default: the web UI's store, the metrics and the event log on its
	// event stream, for the cost of observability on allocation.
	if os.Getenv("DROVER_SCALE_OBSERVE") != "" {
		bus, closeObservers, err := observe(app.ID, conf, log)
		if err != nil {
			return err
		}
		defer closeObservers()
		app.Events = bus
	}
	// A job's figures come from the event stream.
	if p.Job != nil && app.Events == nil {
		app.Events = events.NewBus(nil, log)
		defer app.Events.Close()
	}
	schedOpts.Events = app.Events
	opts, err := k8sconf.Load(conf, app.ID, os.Getenv)
	if err != nil {
		return err
	}
	sched, cl, err := newCluster(schedOpts, app, conf, opts, Deps{WrapTransport: counter.wrap})
	if err != nil {
		return err
	}

	if prof := os.Getenv("DROVER_SCALE_PROFILE"); prof != "" {
		f, err := os.Create(prof + "." + p.Policy + ".cpu")
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	start := time.Now()
	trace(start, time.Time{}, "start", "driver")
	ctx, cancel := context.WithTimeout(context.Background(), driverTimeout(p.Job != nil))
	defer cancel()
	if err := cl.Start(ctx); err != nil {
		return err
	}
	counter.started.Store(true)
	fmt.Println("url", cl.backend.URL())
	ready := make(chan error, 1)
	go func() { ready <- cl.Backend().WaitReady(ctx) }()
	select {
	case err := <-ready:
		if err != nil {
			return err
		}
	case err := <-failed:
		return fmt.Errorf("application failed: %w", err)
	}
	r := driverResult{Elapsed: time.Since(start), CPUToReady: cpuTime(syscall.RUSAGE_SELF), PeakRSSToReady: peakRSS(),
		Registered: len(cl.backend.Executors())}
	fmt.Println("ready")
	if prof := os.Getenv("DROVER_SCALE_PROFILE"); prof != "" {
		if h, err := os.Create(prof + "." + p.Policy + ".heap"); err == nil {
			_ = pprof.WriteHeapProfile(h)
			h.Close()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		_ = os.WriteFile(prof+"."+p.Policy+".mem", fmt.Appendf(nil,
			"at ready: %d goroutines; heap in use %d MiB, heap from the OS %d MiB, stacks %d MiB, other runtime %d MiB\n",
			runtime.NumGoroutine(), ms.HeapInuse>>20, ms.HeapSys>>20, ms.StackSys>>20, (ms.Sys-ms.HeapSys-ms.StackSys)>>20), 0o644)
	}

	if p.Job != nil {
		// Each task's aggregation budget as drive() gives it on
		// Kubernetes: the executor's memory fraction over its cores.
		memory := int64(float64(config.ExecutorMemory.Get(conf))*config.MemoryFraction.Get(conf)) / int64(max(1, config.ExecutorCores.Get(conf)))
		g := dag.New(sched, dag.Options{MaxStageAttempts: 4, MemoryBytes: memory, Logger: log,
			MaxInFlight:    config.ReducerMaxSizeInFlight.Get(conf),
			RemoveShuffles: func(ids []int) { cl.Backend().RemoveShuffles(ids) }})
		graph.Store(g)
		jobCtx, cancelJob := context.WithCancelCause(ctx)
		go func() {
			select {
			case err := <-failed:
				cancelJob(fmt.Errorf("application failed: %w", err))
			case <-jobCtx.Done():
			}
		}()
		r.Job, err = runScaleJobs(jobCtx, g, app.Events, *p.Job)
		cancelJob(nil)
		if err != nil {
			return err
		}
	} else {
		// Idle: the watch is healthy, so nothing may list, and nothing writes.
		atReady := counter.snapshot()
		select {
		case <-time.After(p.Hold):
		case err := <-failed:
			return fmt.Errorf("application failed while idle: %w", err)
		}
		r.HoldWrites = writes(counter.snapshot()) - writes(atReady)
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer stopCancel()
	if err := cl.Stop(stopCtx); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	if prof := os.Getenv("DROVER_SCALE_PROFILE"); prof != "" {
		// Its allocations less the ready profile's are the stop's
		// (go tool pprof -sample_index=alloc_space -base ...heap ...stop.heap);
		// a profile shows the allocations up to the last collection.
		runtime.GC()
		if h, err := os.Create(prof + "." + p.Policy + ".stop.heap"); err == nil {
			_ = pprof.WriteHeapProfile(h)
			h.Close()
		}
	}
	r.Driver = counter.snapshot()
	r.ListsAfter = counter.lists.Load()
	out, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Printf("result %s\n", out)
	return nil
}

// scaleConf is the driver's configuration: its executors, its namespace
// and template, its allocation policy, and DROVER_SCALE_CONF.
func scaleConf(p driverParams) *config.Conf {
	conf := config.New().
		Set("spark.kubernetes.namespace", p.Namespace).
		Set("spark.kubernetes.container.image", "drover-sim:latest").
		Set("spark.kubernetes.executor.podTemplateFile", p.Template).
		Set("spark.driver.host", "127.0.0.1").
		Set("spark.executor.instances", strconv.Itoa(p.N)).
		Set("spark.scheduler.minRegisteredResourcesRatio", "1").
		Set("spark.scheduler.maxRegisteredResourcesWaitingTime", "15m").
		Set("drover.kubernetes.allocation.policy", p.Policy)
	for _, kv := range strings.Split(os.Getenv("DROVER_SCALE_CONF"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			conf.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return conf
}

// driverTimeout bounds a driver process: allocation, or allocation and a job.
func driverTimeout(job bool) time.Duration {
	if job {
		return 45 * time.Minute
	}
	return 15 * time.Minute
}

// peakRSS is the process's peak resident set so far, in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10 // Linux reports kilobytes
}

func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// allocation is one allocationRun.
type allocation struct {
	policy string
	n      int
	hold   time.Duration
	// fault, if set, runs on its own goroutine once the driver started,
	// with the watcher of the namespace's pods: it strikes while the
	// driver allocates or holds (a fault test; the driver then logs).
	fault func(w *podWatcher)
	// relists allows the driver to list again (after an API server
	// outage, its watch must).
	relists bool
	// job, if set, is run by the driver once every executor registered:
	// the executors then run in child processes, every tenth in one of its
	// own, killed (and their pods deleted) when the driver says "lose"
	// (not with job.CleanOnly, whose executors share hosts).
	job *scaleJobParams
	// apiServers, if set, is the driver's master URL after k8s:// (a
	// comma-separated list fails over); else env.URL.
	apiServers string
	// timeout, if set, bounds the driver process; else driverTimeout
	// plus five minutes.
	timeout time.Duration
}

// allocationRun starts a driver process for policy and, for each of its
// pods that runs, an executor simulated here that registers with it. The
// driver must create exactly n pods, as the API server's audit log counts
// them.
func allocationRun(b testing.TB, env *testenv.Env, a allocation) scaleRun {
	policy, n, hold := a.policy, a.n, a.hold
	ns := env.NewNamespace(b)
	apiServer := env.URL
	if a.apiServers != "" {
		apiServer = a.apiServers
	}
	params, err := json.Marshal(driverParams{Namespace: ns, Policy: policy, APIServer: apiServer,
		Template: kwokTemplate(b), N: n, Hold: hold, LogInfo: a.fault != nil, Job: a.job})
	if err != nil {
		b.Fatal(err)
	}
	timeout := driverTimeout(a.job != nil) + 5*time.Minute
	if a.timeout > 0 {
		timeout = a.timeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), driverEnv+"="+string(params), "KUBECONFIG="+env.Kubeconfig)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if testing.Verbose() && os.Getenv("DROVER_SCALE_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)

	// Simulated executors: one per Running pod, over the real RPC, once the
	// driver said where it listens, with the credentials real executors
	// get: from the application's Secret.
	driverURL := make(chan string)
	var url string
	var auth rpc.Auth
	var urlOnce sync.Once
	execCtx, stopExecs := context.WithCancel(context.Background())
	var execs sync.WaitGroup
	// Past executorsPerHost, executors run in child processes.
	var hosts atomic.Pointer[executorHosts]
	appID := "drover-scale-" + policy
	watcher := watchPods(b, env, ns, func(p *corev1.Pod) {
		execs.Add(1)
		go func() {
			defer execs.Done()
			urlOnce.Do(func() {
				url = <-driverURL
				auth = executorAuth(b, env, ns, appID)
				if n > executorsPerHost || a.job != nil {
					hp := execHostParams{URL: url, AppID: appID, Secret: auth.Secret}
					if bundle, ok := auth.TLS(); ok {
						hp.TLS = bundle.Encode()
					}
					hl := hostLayout{perHost: executorsPerHost}
					if a.job != nil {
						hl = jobHostLayout(n, b.TempDir())
						if a.job.CleanOnly {
							hl.victimEvery = 0
						}
					}
					hosts.Store(startExecutorHosts(b, n, hp, hl))
				}
			})
			if h := hosts.Load(); h != nil {
				h.start(mustExecutorID(b, p), p.Name, p.Status.PodIP)
				return
			}
			trace(time.Now(), time.Time{}, "execstart", p.Name)
			_ = executor.Run(execCtx, executor.Options{
				DriverURL: url, AppID: appID, ExecutorID: mustExecutorID(b, p),
				PodName: p.Name, BindHost: p.Status.PodIP, Cores: 1, Auth: auth, Logger: slog.New(slog.DiscardHandler),
			})
		}()
	})
	stopProgress := watcher.progress(b)
	defer stopProgress()

	resources := []string{"pods", "configmaps"}
	before := apiserverRequests(b, env, resources...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	failed := func(format string, args ...any) {
		stopExecs()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if h := hosts.Load(); h != nil {
			h.stop()
		}
		b.Fatalf("%s; the driver's output:\n%s", fmt.Sprintf(format, args...), tail(stderr.Bytes()))
	}
	var r scaleRun
	var deletes sync.WaitGroup
	faultDone := make(chan struct{})
	if a.fault != nil {
		go func() { defer close(faultDone); a.fault(watcher) }()
	} else {
		close(faultDone)
	}
	for lines.Scan() {
		word, rest, _ := strings.Cut(lines.Text(), " ")
		switch word {
		case "url":
			go func() { driverURL <- rest }()
		case "ready":
			r.peakPending = watcher.peakPending.Load()
			stopProgress()
			r.apiserver = apiserverRequests(b, env, resources...).Since(before).Counts()
		case "lose":
			// Abruptly: the executors' process is killed at once, then their
			// pods are deleted, as a node that dies and is drained.
			h := hosts.Load()
			if h == nil {
				failed("the driver asked for a loss without executor hosts")
			}
			r.victims = h.killVictims()
			deletes.Go(func() { deletePods(b, env, ns, r.victims) })
		case "result":
			if err := json.Unmarshal([]byte(rest), &r.driverResult); err != nil {
				failed("reading the driver's result: %v", err)
			}
		}
	}
	deletes.Wait()
	if err := cmd.Wait(); err != nil {
		failed("the driver process: %v", err)
	}
	<-faultDone
	stopExecs()
	execs.Wait()
	if h := hosts.Load(); h != nil {
		h.stop()
	}
	r.stderr = stderr.String()
	if r.Driver == nil {
		failed("the driver reported no result")
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		r.peakRSS = ru.Maxrss << 10 // Linux reports kilobytes
	}
	if r.Registered < n {
		b.Fatalf("%d of %d executors registered", r.Registered, n)
	}
	if r.ListsAfter > 0 && !a.relists {
		b.Errorf("the driver listed pods %d times after its informer synced", r.ListsAfter)
	}
	creates, err := env.PodCreates("drover-driver/")
	if err != nil {
		b.Fatal(err)
	}
	// The pods created are those the audit log shows created, and those the
	// watcher saw: a create the API server stored just before it was killed
	// has no audit event (it is written when the response completes), and
	// the driver's resend of it gets 409 AlreadyExists.
	created := map[string]bool{}
	for _, name := range watcher.names() {
		created[name] = true
	}
	for _, c := range creates {
		if c.Namespace != ns {
			continue
		}
		switch c.Code {
		case http.StatusCreated:
			created[c.Name] = true
		case http.StatusConflict:
			// A resend under the same name: no new pod.
		default:
			r.podCreatesRefused++
		}
	}
	r.created = slices.Sorted(maps.Keys(created))
	r.podCreates = len(r.created)
	switch {
	case a.job != nil:
		// Lost executors are replaced while the target stays n; a
		// replacement may still be unborn when the application ends.
		if r.podCreates < n || r.podCreates > n+len(r.victims) {
			b.Errorf("the driver created %d executor pods for %d executors and %d lost; want between %d and %d",
				r.podCreates, n, len(r.victims), n, n+len(r.victims))
		}
		checkScaleJob(b, *a.job, r.Job, victimIDs(r.victims))
	case r.podCreates != n:
		b.Errorf("the driver created %d executor pods for %d executors (audit log and pod watch); want exactly %d", r.podCreates, n, n)
	}
	if r.HoldWrites > 0 {
		b.Errorf("the driver wrote %d times while the application idled", r.HoldWrites)
	}
	b.Logf("%s: %d executors registered in %s; peak pending pods %d; driver requests over the application's life (counting transport): %s "+
		"= %.3f writes per executor; LIST after start: %d; writes while idle for %s: %d; driver CPU %.2f s until registered, %.2f s over its life; peak RSS %d MiB until registered, %d MiB over its life",
		policy, n, r.Elapsed.Round(10*time.Millisecond), r.peakPending, formatCounts(r.Driver),
		float64(writes(r.Driver))/float64(n), r.ListsAfter, hold, r.HoldWrites, r.CPUToReady.Seconds(), r.cpu.Seconds(), r.PeakRSSToReady>>20, r.peakRSS>>20)
	b.Logf("%s: apiserver_request_total during the ramp-up, all clients: %s", policy, formatCounts(r.apiserver))
	return r
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// BenchmarkAllocationAdaptive is drover's default policy.
func BenchmarkAllocationAdaptive(b *testing.B) { benchmarkAllocation(b, "adaptive") }

// BenchmarkAllocationSpark is Spark's direct allocator, batch 20 per second.
func BenchmarkAllocationSpark(b *testing.B) { benchmarkAllocation(b, "spark") }

// BenchmarkAllocationRawBaseline is the physical limit of the control
// plane: N executor-sized pods (the requests of a default executor pod)
// created by 16 parallel clients, timed until all are Running; no driver,
// no registration.
func BenchmarkAllocationRawBaseline(b *testing.B) { benchmarkRaw(b, minimalPods) }

// BenchmarkAllocationRawDriverPods is the raw baseline with the pods the
// benchmark's driver creates (drover's pod builder and the driver's
// configuration) instead of minimal ones: the same parallel creates, so
// that adaptive against it is the allocation alone, and against the raw
// baseline also what the executor pod's content costs the control plane
// (its environment, volumes and security context are written, validated,
// tracked and sent to every watcher with each of its updates).
func BenchmarkAllocationRawDriverPods(b *testing.B) { benchmarkRaw(b, driverPods) }

// minimalPods are the raw baseline's n pods: a container with a default
// executor pod's requests, on a kwok node.
func minimalPods(_ testing.TB, _ string, n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("raw-%d", i+1), Labels: map[string]string{"spark-role": "executor"}},
			Spec: corev1.PodSpec{
				NodeSelector:  map[string]string{testenv.KwokNodeLabel: "true"},
				Tolerations:   []corev1.Toleration{testenv.KwokToleration},
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "executor", Image: "drover-sim:latest",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1408Mi")}}}},
			},
		}
	}
	return pods
}

// driverPods are the n executor pods the benchmark's driver would create in
// namespace ns, with mutual TLS credentials in its Secret.
func driverPods(b testing.TB, ns string, n int) []*corev1.Pod {
	conf := scaleConf(driverParams{Namespace: ns, Policy: "adaptive", Template: kwokTemplate(b), N: n})
	ec, err := k8sconf.ExecutorConf(conf, "drover-scale-raw", nil, "127.0.0.1:7078", []string{os.Args[0]})
	if err != nil {
		b.Fatal(err)
	}
	ec.Credentials = podspec.Credentials{TLS: []byte("pem")}
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		if pods[i], err = podspec.BuildExecutorPod(ec, executorid.ID(i+1)); err != nil {
			b.Fatal(err)
		}
	}
	return pods
}

func benchmarkRaw(b *testing.B, build func(tb testing.TB, ns string, n int) []*corev1.Pod) {
	env := scaleEnv.Env(b)
	n := scaleN()
	var total time.Duration
	var peak int64
	runs := 0
	for b.Loop() {
		elapsed, pending := rawRun(b, env, n, build)
		total += elapsed
		peak = max(peak, pending)
		runs++
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(runs), "ns/op")
	b.ReportMetric(total.Seconds()/float64(runs), "s-to-running")
	b.ReportMetric(float64(peak), "peak-pending")
}

func rawRun(b *testing.B, env *testenv.Env, n int, build func(tb testing.TB, ns string, n int) []*corev1.Pod) (time.Duration, int64) {
	ns := env.NewNamespace(b)
	watcher := watchPods(b, env, ns, nil)
	stopProgress := watcher.progress(b)
	defer stopProgress()
	// The pods are built before the clock starts: the baseline times the
	// creates alone (a driver's builds count in its allocation).
	pods := build(b, ns, n)
	before := apiserverRequests(b, env, "pods")
	start := time.Now()
	trace(start, time.Time{}, "start", "raw")
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if _, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), pods[i-1], metav1.CreateOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Minute, true,
		func(context.Context) (bool, error) { return watcher.running.Load() >= int64(n), nil }) != nil {
		b.Fatalf("%d of %d pods running after 10 minutes", watcher.running.Load(), n)
	}
	elapsed := time.Since(start)
	b.Logf("raw baseline: %d pods running in %s; peak pending pods %d; apiserver_request_total, all clients: %s",
		n, elapsed.Round(10*time.Millisecond), watcher.peakPending.Load(), formatCounts(apiserverRequests(b, env, "pods").Since(before).Counts()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = env.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	return elapsed, watcher.peakPending.Load()
}

// mustExecutorID is the executor id of a pod the driver created, for the
// simulated executors that register in its place.
func mustExecutorID(tb testing.TB, p *corev1.Pod) executorid.ID {
	id, ok := snapshot.ExecutorID(p)
	if !ok {
		tb.Errorf("pod %s has no executor id label: %v", p.Name, p.Labels)
	}
	return id
}

// executorAuth is what an executor of appID reads from the application's
// Secret (podspec.ExecutorAuthSecret): no credentials when there is none.
func executorAuth(tb testing.TB, env *testenv.Env, ns, appID string) rpc.Auth {
	sec, err := env.Client.CoreV1().Secrets(ns).Get(context.Background(), podspec.AuthSecretName(appID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return rpc.Auth{}
	}
	if err != nil {
		tb.Errorf("reading the executors' Secret: %v", err)
		return rpc.Auth{}
	}
	auth := rpc.Auth{AppID: appID, Secret: string(sec.Data[podspec.AuthSecretKey])}
	if pem := sec.Data[podspec.TLSKey]; len(pem) > 0 {
		bundle, err := mtls.Decode(appID, pem)
		if err == nil {
			auth, err = auth.WithTLS(bundle, slog.New(slog.DiscardHandler))
		}
		if err != nil {
			tb.Errorf("the executors' TLS bundle: %v", err)
		}
	}
	return auth
}

// observe subscribes the UI's store, the metrics and an event log (in a
// temporary directory) to a new event stream, as drive() does.
func observe(appID string, conf *config.Conf, log *slog.Logger) (*events.Bus, func(), error) {
	bus := events.NewBus(nil, log)
	store := appstate.New(settings.UIStore(conf))
	bus.Subscribe("ui", 0, store.Handle)
	dm := metrics.NewDriver(metrics.Options{AppID: appID, AppName: "scale", Bus: bus}, false)
	bus.Subscribe("metrics", 0, dm.Events.Handle)
	dir, err := os.MkdirTemp("", "drover-scale-events-")
	if err != nil {
		return nil, nil, err
	}
	opts, _ := settings.EventLog(config.New().Set("spark.eventLog.enabled", "true").Set("spark.eventLog.dir", dir), appID)
	opts.Logger = log
	w, err := eventlog.Start(context.Background(), opts)
	if err != nil {
		return nil, nil, err
	}
	bus.Subscribe("eventlog", 10*events.DefaultCapacity, w.Handle)
	bus.Publish(&events.AppStart{AppID: appID, Name: "scale"})
	return bus, func() {
		bus.Publish(&events.AppEnd{})
		bus.Close()
		_ = w.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

// mustParseMaster parses a master URL the test made: with a list of API
// servers, the driver's client fails over between them.
func mustParseMaster(s string) master.URL {
	m, err := master.Parse(s)
	if err != nil {
		panic(err)
	}
	return m
}
