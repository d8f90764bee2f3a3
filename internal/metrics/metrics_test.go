package metrics

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/scheduler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) events.Header { return events.Header{Time: t0.Add(d)} }

// storyEvents is a small application: executors 1 and 2 register (1's pod
// took 3 s), run tasks, 1 is OOM-killed; pods are created, refused and
// deleted; an allocation round and a job.
func storyEvents() []events.Event {
	return []events.Event{
		&events.JobStart{JobID: 1},
		&events.PodCreated{Header: at(0), Executor: 1},
		&events.PodCreated{Header: at(0), Executor: 2},
		&events.PodCreated{Header: at(0), Executor: 3, Err: "exceeded quota"},
		&events.AllocationRound{Target: 3, Running: 1, Pending: 2, Gated: 1, Created: 2, Latency: 20 * time.Millisecond},
		&events.ExecutorAdded{Header: at(3 * time.Second), Executor: 1, Cores: 4},
		&events.ExecutorAdded{Header: at(5 * time.Second), Executor: 2, Cores: 2},
		&events.TaskStart{TaskID: 1, Executor: 1},
		&events.TaskStart{TaskID: 2, Executor: 1},
		&events.TaskStart{TaskID: 3, Executor: 1},
		&events.TaskStart{TaskID: 4, Executor: 2},
		&events.TaskEnd{TaskID: 1, Executor: 1, State: events.TaskSuccess, Duration: 1500 * time.Millisecond,
			Metrics: events.TaskMetrics{InputBytes: 100, ShuffleReadBytes: 10, ShuffleWriteBytes: 1000}},
		&events.TaskEnd{TaskID: 2, Executor: 1, State: events.TaskFailed, Reason: "boom", Duration: 500 * time.Millisecond},
		&events.TaskEnd{TaskID: 4, Executor: 2, State: events.TaskKilled, Duration: time.Second},
		&events.PodDeleted{Executor: 4, Reason: events.DeleteExcess},
		&events.PodDeleted{Executor: 5, Reason: events.DeleteLost, Err: "timeout"},
		&events.JobEnd{JobID: 1, Err: "task failed"},
		&events.ExecutorRemoved{Executor: 1, Reason: "pod app-exec-1 was OOM-killed", ExitCode: 137, Cause: scheduler.CauseOOMKilled},
		// Task 3 was lost with executor 1: it ends after the removal.
		&events.TaskEnd{TaskID: 3, Executor: 1, State: events.TaskFailed, Reason: "executor lost"},
		&events.PodDeleted{Executor: 1, Pod: "app-exec-1", Reason: events.DeleteEnded},
	}
}

func newTest(t *testing.T, o Options) (*Metrics, *prometheus.Registry) {
	t.Helper()
	if o.AppID == "" {
		o.AppID, o.AppName = "app-1", "word count"
	}
	if o.Version == "" {
		o.Version, o.Revision = "v1.2.3", "abc123"
	}
	r := prometheus.NewRegistry()
	return New(r, o), r
}

func TestStory(t *testing.T) {
	m, r := newTest(t, Options{TaskCPUs: 2})
	for _, e := range storyEvents() {
		m.Handle(e)
	}
	// Executor 1 is gone with its series; 2 keeps its own.
	want := `
# HELP metrics_executor_activeTasks Tasks running on the executor.
# TYPE metrics_executor_activeTasks gauge
metrics_executor_activeTasks{application_id="app-1",application_name="word count",executor_id="2"} 0
# HELP metrics_executor_completedTasks_total Tasks that succeeded on the executor.
# TYPE metrics_executor_completedTasks_total counter
metrics_executor_completedTasks_total{application_id="app-1",application_name="word count",executor_id="2"} 0
# HELP metrics_executor_maxTasks Tasks the executor runs at once: its cores / spark.task.cpus.
# TYPE metrics_executor_maxTasks gauge
metrics_executor_maxTasks{application_id="app-1",application_name="word count",executor_id="2"} 1
# HELP metrics_executor_totalCores Cores of the executor.
# TYPE metrics_executor_totalCores gauge
metrics_executor_totalCores{application_id="app-1",application_name="word count",executor_id="2"} 2
# HELP metrics_executor_totalDuration_seconds_total Run time of the executor's finished tasks, as the executor measured it.
# TYPE metrics_executor_totalDuration_seconds_total counter
metrics_executor_totalDuration_seconds_total{application_id="app-1",application_name="word count",executor_id="2"} 1
# HELP metrics_executor_totalTasks_total Tasks started on the executor.
# TYPE metrics_executor_totalTasks_total counter
metrics_executor_totalTasks_total{application_id="app-1",application_name="word count",executor_id="2"} 1
# HELP spark_info Always 1; its labels are the version and VCS revision of drover (Spark's metric, drover's values).
# TYPE spark_info gauge
spark_info{revision="abc123",version="v1.2.3"} 1
# HELP drover_executors_registered Executors registered with the driver (in local mode none: its tasks run on executor "driver").
# TYPE drover_executors_registered gauge
drover_executors_registered 1
# HELP drover_executors_removed_total Executors removed from the driver, by cause: killed, decommissioned, disconnected, heartbeat_timeout, exited, oom_killed, start_failed, evicted, preempted, node_lost, deleted (other: a cluster manager named none).
# TYPE drover_executors_removed_total counter
drover_executors_removed_total{cause="oom_killed"} 1
# HELP drover_executor_pods_created_total Executor pod creates the allocator sent, by result: ok (the API server stored the pod) or error.
# TYPE drover_executor_pods_created_total counter
drover_executor_pods_created_total{result="error"} 1
drover_executor_pods_created_total{result="ok"} 2
# HELP drover_tasks_finished_total Task attempts finished, by state: success, failed, killed.
# TYPE drover_tasks_finished_total counter
drover_tasks_finished_total{state="failed"} 2
drover_tasks_finished_total{state="killed"} 1
drover_tasks_finished_total{state="success"} 1
# HELP drover_jobs_active Jobs (actions) running.
# TYPE drover_jobs_active gauge
drover_jobs_active 0
# HELP drover_jobs_finished_total Jobs (actions) finished, by result: succeeded, failed.
# TYPE drover_jobs_finished_total counter
drover_jobs_finished_total{result="failed"} 1
drover_jobs_finished_total{result="succeeded"} 0
# HELP drover_executor_pods_pending Executor pods created and not running yet (seen pending, or not seen yet), as the allocator's last round counted them.
# TYPE drover_executor_pods_pending gauge
drover_executor_pods_pending 2
# HELP drover_executor_pods_gated Pending executor pods held by a scheduling gate, as the allocator's last round counted them.
# TYPE drover_executor_pods_gated gauge
drover_executor_pods_gated 1
# HELP drover_executor_pods_running Executor pods running, as the allocator's last round counted them.
# TYPE drover_executor_pods_running gauge
drover_executor_pods_running 1
# HELP drover_allocation_target_executors Executors the Kubernetes allocator works towards.
# TYPE drover_allocation_target_executors gauge
drover_allocation_target_executors 3
`
	names := []string{"metrics_executor_activeTasks", "metrics_executor_completedTasks_total", "metrics_executor_maxTasks",
		"metrics_executor_totalCores", "metrics_executor_totalDuration_seconds_total", "metrics_executor_totalTasks_total",
		"spark_info", "drover_executors_registered", "drover_executors_removed_total", "drover_executor_pods_created_total",
		"drover_tasks_finished_total", "drover_jobs_active", "drover_jobs_finished_total", "drover_executor_pods_pending",
		"drover_executor_pods_gated", "drover_executor_pods_running", "drover_allocation_target_executors"}
	if err := testutil.GatherAndCompare(r, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	// Executor 2's failed and byte counters exist at zero; 1's are gone.
	for name, n := range map[string]int{"metrics_executor_failedTasks_total": 1, "metrics_executor_totalShuffleWrite_bytes_total": 1,
		"metrics_executor_totalInputBytes_bytes_total": 1, "metrics_executor_totalShuffleRead_bytes_total": 1} {
		if got, err := testutil.GatherAndCount(r, name); err != nil || got != n {
			t.Errorf("%s: %d series (%v), want %d", name, got, err, n)
		}
	}
	deleted := `
# HELP drover_executor_pods_deleted_total Executor pod deletions the driver asked for, by reason: excess (above the target, not running), lost (not seen within spark.kubernetes.allocation.podCreationTimeout), ended (the pod of an executor that ended or could not start), killed (dynamic allocation removed the executor), unresponsive (the executor's connection or heartbeats stopped); and result (ok, error).
# TYPE drover_executor_pods_deleted_total counter
drover_executor_pods_deleted_total{reason="ended",result="ok"} 1
drover_executor_pods_deleted_total{reason="excess",result="ok"} 1
drover_executor_pods_deleted_total{reason="lost",result="error"} 1
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(deleted), "drover_executor_pods_deleted_total"); err != nil {
		t.Error(err)
	}
	// Pod creation to registration: 3 s for executor 1, 5 s for 2.
	checkHistogram(t, m.registration, 2, 8)
	checkHistogram(t, m.roundLatency, 1, 0.02)
}

// TestExecutorCountersWhileRegistered follows one executor's task counters
// and byte totals before it leaves.
func TestExecutorCountersWhileRegistered(t *testing.T) {
	m, _ := newTest(t, Options{})
	for _, e := range storyEvents()[:14] { // up to task 4's end
		m.Handle(e)
	}
	s := m.executors[1]
	for name, tc := range map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"active":       {s.active, 1},
		"total":        {s.total, 3},
		"completed":    {s.completed, 1},
		"failed":       {s.failed, 1},
		"duration":     {s.duration, 2},
		"input":        {s.input, 100},
		"shuffleRead":  {s.shuffleRead, 10},
		"shuffleWrite": {s.shuffleWrite, 1000},
	} {
		if got := testutil.ToFloat64(tc.c); got != tc.want {
			t.Errorf("executor 1 %s = %v, want %v", name, got, tc.want)
		}
	}
	if got := testutil.ToFloat64(m.registered); got != 2 {
		t.Errorf("registered = %v, want 2", got)
	}
}

func checkHistogram(t *testing.T, h prometheus.Histogram, count uint64, sum float64) {
	t.Helper()
	var pb dto.Metric
	if err := h.Write(&pb); err != nil {
		t.Fatal(err)
	}
	got := pb.GetHistogram()
	if got.GetSampleCount() != count || math.Abs(got.GetSampleSum()-sum) > 1e-9 {
		t.Errorf("histogram: count %d sum %v, want count %d sum %v", got.GetSampleCount(), got.GetSampleSum(), count, sum)
	}
}

// TestRegistrationTime checks which creation a registration is timed from:
// the first successful create, not a failed one or a resend, and none once
// the pod was deleted.
func TestRegistrationTime(t *testing.T) {
	m, _ := newTest(t, Options{})
	for _, e := range []events.Event{
		&events.PodCreated{Header: at(0), Executor: 1, Err: "throttled"},
		&events.PodCreated{Header: at(time.Second), Executor: 1},
		&events.PodCreated{Header: at(2 * time.Second), Executor: 1}, // resent: the first answer was lost
		&events.ExecutorAdded{Header: at(11 * time.Second), Executor: 1, Cores: 1},
		&events.PodCreated{Header: at(0), Executor: 2},
		&events.PodDeleted{Executor: 2, Reason: events.DeleteLost},
		&events.ExecutorAdded{Header: at(time.Minute), Executor: 2, Cores: 1},
		&events.PodCreated{Header: at(0), Executor: 3},
		&events.ExecutorRemoved{Executor: 3, Cause: scheduler.CauseStartFailed},
	} {
		m.Handle(e)
	}
	checkHistogram(t, m.registration, 1, 10)
	if len(m.created) != 0 {
		t.Errorf("creations still remembered: %v", m.created)
	}
}

func TestLocalModeRunsOnExecutorDriver(t *testing.T) {
	m, r := newTest(t, Options{LocalCores: 4})
	m.Handle(&events.TaskStart{TaskID: 1, Executor: executorid.Driver})
	want := `
# HELP metrics_executor_activeTasks Tasks running on the executor.
# TYPE metrics_executor_activeTasks gauge
metrics_executor_activeTasks{application_id="app-1",application_name="word count",executor_id="driver"} 1
# HELP metrics_executor_totalCores Cores of the executor.
# TYPE metrics_executor_totalCores gauge
metrics_executor_totalCores{application_id="app-1",application_name="word count",executor_id="driver"} 4
# HELP drover_executors_registered Executors registered with the driver (in local mode none: its tasks run on executor "driver").
# TYPE drover_executors_registered gauge
drover_executors_registered 0
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want), "metrics_executor_activeTasks",
		"metrics_executor_totalCores", "drover_executors_registered"); err != nil {
		t.Error(err)
	}
}

// TestSeriesAreBoundedByLiveExecutors adds and removes 5,000 executors: no
// executor series and no memory of them is left.
func TestSeriesAreBoundedByLiveExecutors(t *testing.T) {
	m, r := newTest(t, Options{})
	const n = 5000
	for id := executorid.ID(1); id <= n; id++ {
		m.Handle(&events.PodCreated{Executor: id})
		m.Handle(&events.ExecutorAdded{Executor: id, Cores: 1})
		m.Handle(&events.TaskStart{TaskID: int64(id), Executor: id})
	}
	if got, _ := testutil.GatherAndCount(r, "metrics_executor_activeTasks"); got != n {
		t.Fatalf("%d activeTasks series with %d executors", got, n)
	}
	for id := executorid.ID(1); id <= n; id++ {
		m.Handle(&events.ExecutorRemoved{Executor: id, Cause: scheduler.CauseKilled})
		m.Handle(&events.TaskEnd{TaskID: int64(id), Executor: id, State: events.TaskKilled})
	}
	families, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "metrics_executor_") {
			t.Errorf("%s has %d series after every executor left", f.GetName(), len(f.GetMetric()))
		}
	}
	if len(m.executors) != 0 || len(m.created) != 0 {
		t.Errorf("remembered: %d executors, %d creations", len(m.executors), len(m.created))
	}
	if got := testutil.ToFloat64(m.registered); got != 0 {
		t.Errorf("registered = %v, want 0", got)
	}
}

// TestTaskPathDoesNotAllocate guards the cost per task: the scheduler
// publishes two events per task at more than 20,000 tasks/s.
func TestTaskPathDoesNotAllocate(t *testing.T) {
	m, _ := newTest(t, Options{})
	m.Handle(&events.ExecutorAdded{Executor: 1, Cores: 4})
	start := &events.TaskStart{TaskID: 1, Executor: 1}
	end := &events.TaskEnd{TaskID: 1, Executor: 1, State: events.TaskSuccess, Duration: time.Millisecond,
		Metrics: events.TaskMetrics{ShuffleWriteBytes: 10}}
	if n := testing.AllocsPerRun(1000, func() { m.Handle(start); m.Handle(end) }); n != 0 {
		t.Errorf("%v allocations per task, want 0", n)
	}
}

func BenchmarkHandleTask(b *testing.B) {
	m := New(prometheus.NewRegistry(), Options{AppID: "app", AppName: "bench"})
	for id := executorid.ID(1); id <= 100; id++ {
		m.Handle(&events.ExecutorAdded{Executor: id, Cores: 4})
	}
	start := &events.TaskStart{TaskID: 1, Executor: 7}
	end := &events.TaskEnd{TaskID: 1, Executor: 7, State: events.TaskSuccess, Duration: time.Millisecond}
	for b.Loop() {
		m.Handle(start)
		m.Handle(end)
	}
}

func TestBacklogAndDroppedEvents(t *testing.T) {
	bus := events.NewBus(nil, nil)
	held, release := make(chan struct{}, 10), make(chan struct{})
	bus.Subscribe("slow", 1, func(events.Event) { held <- struct{}{}; <-release })
	m, r := newTest(t, Options{Backlog: fixedBacklog{pending: 7, running: 3}, Bus: bus})
	bus.Subscribe("metrics", 0, m.Handle)
	bus.Publish(&events.JobStart{})
	<-held
	// The slow consumer holds the first event and queues one more: the
	// other eight drop.
	for range 9 {
		bus.Publish(&events.JobStart{})
	}
	want := `
# HELP drover_events_dropped_total Events an event-stream consumer lost because its queue was full, by consumer (progress; status: the metrics, the web UI and the event log).
# TYPE drover_events_dropped_total counter
drover_events_dropped_total{consumer="metrics"} 0
drover_events_dropped_total{consumer="slow"} 8
# HELP drover_scheduler_pending_tasks Tasks waiting for a free core, retries included.
# TYPE drover_scheduler_pending_tasks gauge
drover_scheduler_pending_tasks 7
# HELP drover_scheduler_running_tasks Tasks running on executors.
# TYPE drover_scheduler_running_tasks gauge
drover_scheduler_running_tasks 3
`
	err := testutil.GatherAndCompare(r, strings.NewReader(want), "drover_events_dropped_total",
		"drover_scheduler_pending_tasks", "drover_scheduler_running_tasks")
	close(release)
	bus.Close()
	if err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(m.jobsActive); got != 10 {
		t.Errorf("jobs active = %v, want 10", got)
	}
}

type fixedBacklog struct{ pending, running int }

func (b fixedBacklog) PendingTasks() int { return b.pending }
func (b fixedBacklog) RunningTasks() int { return b.running }

func TestHandlerServesTextFormat(t *testing.T) {
	m, r := newTest(t, Options{})
	m.Handle(&events.ExecutorAdded{Executor: 3, Cores: 2})
	srv := httptest.NewServer(Handler(r))
	defer srv.Close()
	resp, err := http.Get(srv.URL + Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want text/plain", ct)
	}
	for _, line := range []string{
		`spark_info{revision="abc123",version="v1.2.3"} 1`,
		`metrics_executor_totalCores{application_id="app-1",application_name="word count",executor_id="3"} 2`,
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("scrape lacks %q:\n%s", line, body)
		}
	}
}

// A TaskEnd with its Launch time (a start the scheduler did not publish
// on its own) counts as its TaskStart and TaskEnd handed in apart do.
func TestTaskEndWithItsStart(t *testing.T) {
	evs := storyEvents()[:14]
	ended := map[int64]bool{}
	for _, e := range evs {
		if e, ok := e.(*events.TaskEnd); ok {
			ended[e.TaskID] = true
		}
	}
	apart, _ := newTest(t, Options{})
	together, _ := newTest(t, Options{})
	launches := map[int64]*events.TaskStart{}
	for _, e := range evs {
		apart.Handle(e)
		switch e := e.(type) {
		case *events.TaskStart:
			if ended[e.TaskID] {
				launches[e.TaskID] = e
				continue
			}
		case *events.TaskEnd:
			c := *e
			c.Launch = launches[e.TaskID].Time.Add(time.Microsecond) // any time
			together.Handle(&c)
			continue
		}
		together.Handle(e)
	}
	if len(launches) == 0 {
		t.Fatal("the story has no task that ends")
	}
	for id, s := range apart.executors {
		o := together.executors[id]
		for name, c := range map[string][2]prometheus.Collector{"active": {s.active, o.active}, "total": {s.total, o.total},
			"completed": {s.completed, o.completed}, "failed": {s.failed, o.failed}, "duration": {s.duration, o.duration}} {
			if a, b := testutil.ToFloat64(c[0]), testutil.ToFloat64(c[1]); a != b {
				t.Errorf("executor %v %s: %v with starts apart, %v with their ends", id, name, a, b)
			}
		}
	}
}
