package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

// Options describe the application the metrics are of.
type Options struct {
	// AppID and AppName label Spark's executor metrics (application_id,
	// application_name).
	AppID, AppName string
	// TaskCPUs is spark.task.cpus: an executor runs cores / TaskCPUs tasks
	// at once (metrics_executor_maxTasks). 0 means 1.
	TaskCPUs int
	// LocalCores, in local mode, is the driver's task slots: tasks run on
	// executor "driver", as in Spark, which has series from the start.
	LocalCores int
	// Backlog, when set, reports the scheduler's pending and running
	// tasks at each scrape.
	Backlog Backlog
	// Bus, when set, has its consumers' dropped events exported.
	Bus *events.Bus
	// Version and Revision label spark_info; empty takes drover's module
	// version and VCS revision from the build information.
	Version, Revision string
}

// Backlog is what the scheduler tells of its tasks.
type Backlog interface {
	PendingTasks() int
	RunningTasks() int
}

// Labels of Spark's executor metrics.
const (
	labelAppID    = "application_id"
	labelAppName  = "application_name"
	labelExecutor = "executor_id"
)

// Metrics keeps the metrics that follow the event stream; Handle is its
// consumer. Only the bus's goroutine for it calls Handle, so its maps need
// no lock; Prometheus reads the series, which are safe for that.
type Metrics struct {
	o Options

	// Spark's executor metrics, curried with the application's labels:
	// only executor_id is left.
	execCores, execMaxTasks, execActive                        *prometheus.GaugeVec
	execCompleted, execFailed, execTotal                       *prometheus.CounterVec
	execDuration, execInput, execShuffleRead, execShuffleWrite *prometheus.CounterVec
	executors                                                  map[executorid.ID]*executorSeries

	registered    prometheus.Gauge
	podsCreated   [2]prometheus.Counter // by createOK, createError
	podsDeleted   *prometheus.CounterVec
	podsRunning   prometheus.Gauge
	podsPending   prometheus.Gauge
	podsGated     prometheus.Gauge
	allocTarget   prometheus.Gauge
	roundLatency  prometheus.Histogram
	registration  prometheus.Histogram
	removed       *prometheus.CounterVec
	tasksFinished [3]prometheus.Counter // by taskSuccess, taskFailed, taskKilled
	jobsActive    prometheus.Gauge
	jobsFinished  [2]prometheus.Counter // by jobSucceeded, jobFailed

	// created holds when each executor's pod was created, until the
	// executor registers or its pod is deleted.
	created map[executorid.ID]time.Time
}

const (
	createOK = iota
	createError
)

const (
	taskSuccess = iota
	taskFailed
	taskKilled
)

const (
	jobSucceeded = iota
	jobFailed
)

// executorSeries are one executor's series, resolved once.
type executorSeries struct {
	label                                      string
	active                                     prometheus.Gauge
	completed, failed, total                   prometheus.Counter
	duration, input, shuffleRead, shuffleWrite prometheus.Counter
}

// Buckets of the histograms, in seconds.
var (
	// roundBuckets: a round is a decision (microseconds) plus the API
	// calls it makes (milliseconds to seconds under throttling).
	roundBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	// registrationBuckets: a pod is scheduled, its image pulled, its
	// process started and connected: seconds, minutes for large images.
	registrationBuckets = []float64{.25, .5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600}
)

// New registers the event stream's metrics on r and returns their
// consumer: subscribe Handle to the bus before the application starts.
func New(r prometheus.Registerer, o Options) *Metrics {
	if o.TaskCPUs <= 0 {
		o.TaskCPUs = 1
	}
	if o.Version == "" && o.Revision == "" {
		o.Version, o.Revision = BuildInfo()
	}
	app := prometheus.Labels{labelAppID: o.AppID, labelAppName: o.AppName}
	execLabels := []string{labelAppID, labelAppName, labelExecutor}
	gauge := func(name, help string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, execLabels)
		r.MustRegister(v)
		return v.MustCurryWith(app)
	}
	counter := func(name, help string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, execLabels)
		r.MustRegister(v)
		return v.MustCurryWith(app)
	}
	m := &Metrics{
		o:         o,
		executors: map[executorid.ID]*executorSeries{},
		created:   map[executorid.ID]time.Time{},

		execCores:    gauge("metrics_executor_totalCores", "Cores of the executor."),
		execMaxTasks: gauge("metrics_executor_maxTasks", "Tasks the executor runs at once: its cores / spark.task.cpus."),
		execActive:   gauge("metrics_executor_activeTasks", "Tasks running on the executor."),
		execCompleted: counter("metrics_executor_completedTasks_total",
			"Tasks that succeeded on the executor."),
		execFailed: counter("metrics_executor_failedTasks_total",
			"Tasks that failed on the executor (killed tasks are neither failed nor completed, as in Spark)."),
		execTotal: counter("metrics_executor_totalTasks_total", "Tasks started on the executor."),
		execDuration: counter("metrics_executor_totalDuration_seconds_total",
			"Run time of the executor's finished tasks, as the executor measured it."),
		execInput: counter("metrics_executor_totalInputBytes_bytes_total",
			"Bytes the executor's finished tasks read from their input."),
		execShuffleRead: counter("metrics_executor_totalShuffleRead_bytes_total",
			"Shuffle bytes the executor's finished tasks read."),
		execShuffleWrite: counter("metrics_executor_totalShuffleWrite_bytes_total",
			"Shuffle bytes the executor's finished tasks wrote."),

		registered: prometheus.NewGauge(prometheus.GaugeOpts{Name: "drover_executors_registered",
			Help: "Executors registered with the driver (in local mode none: its tasks run on executor \"driver\")."}),
		podsRunning: prometheus.NewGauge(prometheus.GaugeOpts{Name: "drover_executor_pods_running",
			Help: "Executor pods running, as the allocator's last round counted them."}),
		podsPending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "drover_executor_pods_pending",
			Help: "Executor pods created and not running yet (seen pending, or not seen yet), as the allocator's last round counted them."}),
		podsGated: prometheus.NewGauge(prometheus.GaugeOpts{Name: "drover_executor_pods_gated",
			Help: "Pending executor pods held by a scheduling gate, as the allocator's last round counted them."}),
		allocTarget: prometheus.NewGauge(prometheus.GaugeOpts{Name: "drover_allocation_target_executors",
			Help: "Executors the Kubernetes allocator works towards."}),
		roundLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "drover_allocation_round_duration_seconds",
			Help: "Time an allocation round took, its Kubernetes API calls included.", Buckets: roundBuckets}),
		registration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "drover_executor_registration_seconds",
			Help:    "Time from an executor pod's creation (the API server's answer) to its executor's registration with the driver.",
			Buckets: registrationBuckets}),
		podsDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drover_executor_pods_deleted_total",
			Help: "Executor pod deletions the driver asked for, by reason: excess (above the target, not running), " +
				"lost (not seen within spark.kubernetes.allocation.podCreationTimeout), ended (the pod of an executor " +
				"that ended or could not start), killed (dynamic allocation removed the executor), unresponsive (the " +
				"executor's connection or heartbeats stopped); and result (ok, error)."}, []string{"reason", "result"}),
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drover_executors_removed_total",
			Help: "Executors removed from the driver, by cause: killed, decommissioned, disconnected, heartbeat_timeout, " +
				"exited, oom_killed, start_failed, evicted, preempted, node_lost, deleted (other: a cluster manager named none)."}, []string{"cause"}),
		jobsActive: prometheus.NewGauge(prometheus.GaugeOpts{Name: "drover_jobs_active",
			Help: "Jobs (actions) running."}),
	}
	created := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drover_executor_pods_created_total",
		Help: "Executor pod creates the allocator sent, by result: ok (the API server stored the pod) or error."}, []string{"result"})
	m.podsCreated = [2]prometheus.Counter{created.WithLabelValues("ok"), created.WithLabelValues("error")}
	tasks := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drover_tasks_finished_total",
		Help: "Task attempts finished, by state: success, failed, killed."}, []string{"state"})
	m.tasksFinished = [3]prometheus.Counter{tasks.WithLabelValues("success"), tasks.WithLabelValues("failed"),
		tasks.WithLabelValues("killed")}
	jobs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drover_jobs_finished_total",
		Help: "Jobs (actions) finished, by result: succeeded, failed."}, []string{"result"})
	m.jobsFinished = [2]prometheus.Counter{jobs.WithLabelValues("succeeded"), jobs.WithLabelValues("failed")}
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "spark_info",
		Help:        "Always 1; its labels are the version and VCS revision of drover (Spark's metric, drover's values).",
		ConstLabels: prometheus.Labels{"version": o.Version, "revision": o.Revision}})
	info.Set(1)
	r.MustRegister(m.registered, m.podsRunning, m.podsPending, m.podsGated, m.allocTarget, m.roundLatency,
		m.registration, m.podsDeleted, m.removed, m.jobsActive, created, tasks, jobs, info)
	if o.Backlog != nil {
		r.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "drover_scheduler_pending_tasks",
				Help: "Tasks waiting for a free core, retries included."},
				func() float64 { return float64(o.Backlog.PendingTasks()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "drover_scheduler_running_tasks",
				Help: "Tasks running on executors."},
				func() float64 { return float64(o.Backlog.RunningTasks()) }))
	}
	if o.Bus != nil {
		r.MustRegister(droppedCollector{o.Bus})
	}
	if o.LocalCores > 0 {
		m.addExecutor(executorid.Driver, o.LocalCores)
	}
	return m
}

// HandleAll folds events into the metrics, in order; it is the bus
// consumer (events.Bus.SubscribeBatches).
func (m *Metrics) HandleAll(evs []events.Event) {
	for _, e := range evs {
		m.Handle(e)
	}
}

// Handle folds one event into the metrics.
func (m *Metrics) Handle(e events.Event) {
	switch e := e.(type) {
	case *events.TaskStart:
		if s := m.executors[e.Executor]; s != nil {
			s.active.Inc()
			s.total.Inc()
		}
	case *events.TaskEnd:
		m.taskEnd(e)
	case *events.ExecutorAdded:
		if _, ok := m.executors[e.Executor]; !ok {
			m.registered.Inc()
		}
		m.addExecutor(e.Executor, e.Cores)
		if at, ok := m.created[e.Executor]; ok {
			delete(m.created, e.Executor)
			m.registration.Observe(max(e.Time.Sub(at), 0).Seconds())
		}
	case *events.ExecutorRemoved:
		if m.removeExecutor(e.Executor) {
			m.registered.Dec()
		}
		delete(m.created, e.Executor)
		cause := e.Cause
		if cause == "" {
			cause = "other"
		}
		m.removed.WithLabelValues(cause).Inc()
	case *events.PodCreated:
		if e.Err != "" {
			m.podsCreated[createError].Inc()
			return
		}
		m.podsCreated[createOK].Inc()
		// A create sent again whose first answer was lost keeps the
		// first time: the pod may have existed since.
		if _, ok := m.created[e.Executor]; !ok {
			m.created[e.Executor] = e.Time
		}
	case *events.PodDeleted:
		result := "ok"
		if e.Err != "" {
			result = "error"
		}
		m.podsDeleted.WithLabelValues(e.Reason, result).Inc()
		delete(m.created, e.Executor)
	case *events.AllocationRound:
		m.allocTarget.Set(float64(e.Target))
		m.podsRunning.Set(float64(e.Running))
		m.podsPending.Set(float64(e.Pending))
		m.podsGated.Set(float64(e.Gated))
		m.roundLatency.Observe(e.Latency.Seconds())
	case *events.JobStart:
		m.jobsActive.Inc()
	case *events.JobEnd:
		m.jobsActive.Dec()
		if e.Err != "" {
			m.jobsFinished[jobFailed].Inc()
		} else {
			m.jobsFinished[jobSucceeded].Inc()
		}
	}
}

// taskEnd counts a finished task attempt: the hot path, with no allocation.
func (m *Metrics) taskEnd(e *events.TaskEnd) {
	state := taskKilled
	switch e.State {
	case events.TaskSuccess:
		state = taskSuccess
	case events.TaskFailed:
		state = taskFailed
	}
	m.tasksFinished[state].Inc()
	// An executor's lost tasks end after it is removed: they have no
	// series any more.
	s := m.executors[e.Executor]
	if s == nil {
		return
	}
	if e.Launch.IsZero() {
		s.active.Dec()
	} else {
		s.total.Inc() // its start was not published on its own
	}
	switch state {
	case taskSuccess:
		s.completed.Inc()
	case taskFailed:
		s.failed.Inc()
	}
	if e.Duration > 0 {
		s.duration.Add(e.Duration.Seconds())
	}
	if e.Metrics.InputBytes > 0 {
		s.input.Add(float64(e.Metrics.InputBytes))
	}
	if e.Metrics.ShuffleReadBytes > 0 {
		s.shuffleRead.Add(float64(e.Metrics.ShuffleReadBytes))
	}
	if e.Metrics.ShuffleWriteBytes > 0 {
		s.shuffleWrite.Add(float64(e.Metrics.ShuffleWriteBytes))
	}
}

// addExecutor resolves an executor's series and sets its cores.
func (m *Metrics) addExecutor(id executorid.ID, cores int) {
	s := m.executors[id]
	if s == nil {
		l := id.String()
		s = &executorSeries{label: l,
			active: m.execActive.WithLabelValues(l), completed: m.execCompleted.WithLabelValues(l),
			failed: m.execFailed.WithLabelValues(l), total: m.execTotal.WithLabelValues(l),
			duration: m.execDuration.WithLabelValues(l), input: m.execInput.WithLabelValues(l),
			shuffleRead: m.execShuffleRead.WithLabelValues(l), shuffleWrite: m.execShuffleWrite.WithLabelValues(l)}
		m.executors[id] = s
	}
	m.execCores.WithLabelValues(s.label).Set(float64(cores))
	m.execMaxTasks.WithLabelValues(s.label).Set(float64(cores / m.o.TaskCPUs))
}

// removeExecutor deletes an executor's series and reports whether it had
// any.
func (m *Metrics) removeExecutor(id executorid.ID) bool {
	s := m.executors[id]
	if s == nil {
		return false
	}
	delete(m.executors, id)
	for _, v := range []*prometheus.GaugeVec{m.execCores, m.execMaxTasks, m.execActive} {
		v.DeleteLabelValues(s.label)
	}
	for _, v := range []*prometheus.CounterVec{m.execCompleted, m.execFailed, m.execTotal, m.execDuration,
		m.execInput, m.execShuffleRead, m.execShuffleWrite} {
		v.DeleteLabelValues(s.label)
	}
	return true
}

// droppedCollector exports each consumer's count of dropped events, read
// from the bus at scrape time.
type droppedCollector struct{ bus *events.Bus }

var droppedDesc = prometheus.NewDesc("drover_events_dropped_total",
	"Events an event-stream consumer lost because its queue was full, by consumer (progress; status: the metrics, the web UI and the event log).",
	[]string{"consumer"}, nil)

func (droppedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- droppedDesc }

func (c droppedCollector) Collect(ch chan<- prometheus.Metric) {
	// Two consumers of one name would be one series twice, which a
	// scrape rejects: they are summed.
	byName := map[string]int64{}
	var names []string
	for _, cons := range c.bus.Consumers() {
		if _, ok := byName[cons.Name()]; !ok {
			names = append(names, cons.Name())
		}
		byName[cons.Name()] += cons.Dropped()
	}
	for _, n := range names {
		ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(byName[n]), n)
	}
}
