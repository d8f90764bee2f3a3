package appstate

import (
	stdcmp "cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// feed stamps each event with t0 + i seconds and hands it to a new store.
func feed(opts Options, evs ...events.Event) *Store {
	s := New(opts)
	for i, e := range evs {
		setTime(e, t0.Add(time.Duration(i)*time.Second))
		s.Handle(e)
	}
	return s
}

// setTime sets the event's header time through its embedded Header.
func setTime(e events.Event, t time.Time) {
	switch e := e.(type) {
	case *events.AppStart:
		e.Time = t
	case *events.AppEnd:
		e.Time = t
	case *events.JobStart:
		e.Time = t
	case *events.JobEnd:
		e.Time = t
	case *events.StageSubmitted:
		e.Time = t
	case *events.StageCompleted:
		e.Time = t
	case *events.TaskStart:
		e.Time = t
	case *events.TaskEnd:
		e.Time = t
	case *events.ExecutorAdded:
		e.Time = t
	case *events.ExecutorRemoved:
		e.Time = t
	case *events.ExecutorPlaced:
		e.Time = t
	case *events.AllocationRound:
		e.Time = t
	case *events.PodCreated:
		e.Time = t
	case *events.TargetChanged:
		e.Time = t
	default:
		panic(fmt.Sprintf("setTime: %T", e))
	}
}

func sec(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

func appStart() *events.AppStart {
	return &events.AppStart{AppID: "drover-1", Name: "wc", Master: "local-cluster[2,1,256]", User: "me", DeployMode: "client",
		DriverHost: "host1", Conf: map[string]string{"spark.app.name": "wc", "spark.password": "*********(redacted)"}}
}

func start(task int64, stage, part, attempt int, ex executorid.ID) *events.TaskStart {
	return &events.TaskStart{TaskID: task, StageID: stage, Partition: part, Attempt: attempt, Executor: ex}
}

func end(task int64, stage, part, attempt int, ex executorid.ID, state, reason string, d time.Duration, m events.TaskMetrics) *events.TaskEnd {
	return &events.TaskEnd{TaskID: task, StageID: stage, Partition: part, Attempt: attempt, Executor: ex, State: state, Reason: reason,
		Duration: d, Metrics: m}
}

func TestJobsAndStages(t *testing.T) {
	added := &events.ExecutorAdded{Executor: 1, Address: "10.0.0.5:7079", Pod: "wc-exec-1", Cores: 2}
	tests := map[string]struct {
		events     []events.Event
		wantJobs   []Job
		wantStages []Stage
	}{
		"a job with a retried task": {
			events: []events.Event{
				appStart(), added, // 0, 1
				&events.JobStart{JobID: 1, Name: "Count at main.go:10"},                // 2
				&events.StageSubmitted{JobID: 1, StageID: 0, Name: "map", NumTasks: 2}, // 3
				start(1, 0, 0, 0, 1), // 4
				start(2, 0, 1, 0, 1), // 5
				end(1, 0, 0, 0, 1, events.TaskSuccess, "", time.Second, events.TaskMetrics{ShuffleWriteBytes: 100}), // 6
				end(2, 0, 1, 0, 1, events.TaskFailed, "boom", 2*time.Second, events.TaskMetrics{}),                  // 7
				start(3, 0, 1, 1, 1), // 8
				end(3, 0, 1, 1, 1, events.TaskSuccess, "", 3*time.Second, events.TaskMetrics{ShuffleWriteBytes: 50, SpillBytes: 7}), // 9
				&events.StageCompleted{StageID: 0}, // 10
				&events.StageSubmitted{JobID: 1, StageID: 1, Name: "reduce", NumTasks: 1, ParentShuffles: []int{0}}, // 11
				start(4, 1, 0, 0, 1), // 12
				end(4, 1, 0, 0, 1, events.TaskKilled, "stage cancelled", time.Second, events.TaskMetrics{ShuffleReadBytes: 150}), // 13
				&events.StageCompleted{StageID: 1, Err: "cancelled"},                                                             // 14
				&events.JobEnd{JobID: 1, Err: "cancelled"},                                                                       // 15
				&events.JobStart{JobID: 2, Name: "Collect at main.go:20"},                                                        // 16
			},
			wantJobs: []Job{
				{ID: 2, Name: "Collect at main.go:20", Submitted: sec(16), Status: JobRunning, KilledTasksSummary: map[string]int{}},
				{ID: 1, Name: "Count at main.go:10", Submitted: sec(2), Completed: sec(15), Status: JobFailed, Err: "cancelled",
					StageIDs: []int{0, 1}, NumTasks: 3, CompletedTasks: 2, FailedTasks: 1, KilledTasks: 1, CompletedIndices: 2,
					CompletedStages: 1, FailedStages: 1, KilledTasksSummary: map[string]int{"stage cancelled": 1}},
			},
			wantStages: []Stage{
				{ID: 1, JobID: 1, Name: "reduce", Status: StageFailed, NumTasks: 1, ParentShuffles: []int{0}, KilledTasks: 1,
					Submitted: sec(11), FirstTaskLaunched: sec(12), Completed: sec(14), FailureReason: "cancelled", RunTime: time.Second,
					Metrics: events.TaskMetrics{ShuffleReadBytes: 150}, KilledTasksSummary: map[string]int{"stage cancelled": 1}},
				{ID: 0, JobID: 1, Name: "map", Status: StageComplete, NumTasks: 2, CompleteTasks: 2, FailedTasks: 1, CompletedIndices: 2,
					Submitted: sec(3), FirstTaskLaunched: sec(4), Completed: sec(10), RunTime: 6 * time.Second,
					Metrics: events.TaskMetrics{ShuffleWriteBytes: 150, SpillBytes: 7}, KilledTasksSummary: map[string]int{}},
			},
		},
		"a running stage": {
			events: []events.Event{
				appStart(),
				&events.JobStart{JobID: 1, Name: "Count"},
				&events.StageSubmitted{JobID: 1, StageID: 3, Attempt: 1, Name: "map", NumTasks: 4},
				&events.TaskStart{TaskID: 10, StageID: 3, StageAttempt: 1, Partition: 2, Executor: executorid.Driver},
			},
			wantJobs: []Job{{ID: 1, Name: "Count", Submitted: sec(1), Status: JobRunning, StageIDs: []int{3}, NumTasks: 4,
				ActiveTasks: 1, ActiveStages: 1, KilledTasksSummary: map[string]int{}}},
			wantStages: []Stage{{ID: 3, Attempt: 1, JobID: 1, Name: "map", Status: StageActive, NumTasks: 4, ActiveTasks: 1,
				Submitted: sec(2), FirstTaskLaunched: sec(3), KilledTasksSummary: map[string]int{}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := feed(Options{}, tc.events...)
			if diff := cmp.Diff(tc.wantJobs, s.Jobs(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Jobs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStages, s.Stages(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Stages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStageDetailAndSummary(t *testing.T) {
	evs := []events.Event{appStart(), &events.ExecutorAdded{Executor: 2, Address: "10.0.0.7:7079", Cores: 1},
		&events.JobStart{JobID: 1}, &events.StageSubmitted{JobID: 1, StageID: 0, NumTasks: 5}}
	// Durations 1..4 s succeed, the fifth task fails.
	for i := range 5 {
		evs = append(evs, start(int64(i), 0, i, 0, 2))
	}
	for i := range 4 {
		evs = append(evs, end(int64(i), 0, i, 0, 2, events.TaskSuccess, "", time.Duration(i+1)*time.Second,
			events.TaskMetrics{ShuffleReadBytes: int64(10 * (i + 1))}))
	}
	evs = append(evs, end(4, 0, 4, 0, 2, events.TaskFailed, "executor lost", 0, events.TaskMetrics{}))
	s := feed(Options{}, evs...)
	d, ok := s.Stage(0, 0)
	if !ok {
		t.Fatal("stage 0.0 not found")
	}
	if len(d.Tasks) != 5 || d.Tasks[0].Host != "10.0.0.7" || d.Tasks[0].Launched != sec(4) {
		t.Errorf("tasks = %+v, want 5 launched from sec 4 on host 10.0.0.7", d.Tasks)
	}
	wantFail := []Task{{ID: 4, Partition: 4, Executor: 2, Host: "10.0.0.7", Launched: sec(8), Ended: sec(13),
		Status: events.TaskFailed, Reason: "executor lost"}}
	if diff := cmp.Diff(wantFail, d.Failures); diff != "" {
		t.Errorf("Failures (-want +got):\n%s", diff)
	}
	got := d.Summary(PageQuantiles)
	want := Distribution{Quantiles: PageQuantiles, Tasks: 4,
		Duration:         []float64{1000, 2000, 3000, 4000, 4000},
		ShuffleReadBytes: []float64{10, 20, 30, 40, 40},
	}
	zero := []float64{0, 0, 0, 0, 0}
	want.InputBytes, want.InputRecords, want.OutputBytes, want.OutputRecords = zero, zero, zero, zero
	want.ShuffleReadRecs, want.ShuffleWriteBytes, want.ShuffleWriteRecs, want.SpillBytes, want.ResultBytes = zero, zero, zero, zero, zero
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summary (-want +got):\n%s", diff)
	}
	if _, ok := s.Stage(0, 1); ok {
		t.Error("Stage(0, 1) found an attempt that never ran")
	}
	if got := (StageDetail{}).Summary(APIQuantiles); got.Tasks != 0 || got.Duration != nil {
		t.Errorf("Summary of no task = %+v, want empty series", got)
	}
}

func TestQuantilesFollowSparksIndexRule(t *testing.T) {
	tests := map[string]struct {
		xs, qs, want []float64
	}{
		"one value":      {xs: []float64{7}, qs: []float64{0, 0.5, 1}, want: []float64{7, 7, 7}},
		"ten values":     {xs: []float64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, qs: APIQuantiles, want: []float64{0, 2, 5, 7, 9}},
		"four, page set": {xs: []float64{4, 1, 3, 2}, qs: PageQuantiles, want: []float64{1, 2, 3, 4, 4}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, quantiles(tc.xs, tc.qs)); diff != "" {
				t.Errorf("quantiles (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetention(t *testing.T) {
	t.Run("tasks: the oldest finished go, running ones stay, counts stay", func(t *testing.T) {
		evs := []events.Event{appStart(), &events.JobStart{JobID: 1}, &events.StageSubmitted{JobID: 1, StageID: 0, NumTasks: 30},
			start(0, 0, 0, 0, 0)} // task 0 keeps running
		for i := 1; i <= 25; i++ {
			evs = append(evs, start(int64(i), 0, i, 0, 0), end(int64(i), 0, i, 0, 0, events.TaskSuccess, "", time.Second, events.TaskMetrics{}))
		}
		s := feed(Options{RetainedTasks: 10}, evs...)
		d, _ := s.Stage(0, 0)
		var ids []int64
		for _, task := range d.Tasks {
			ids = append(ids, task.ID)
		}
		// 26 tasks against 10 kept: trimmed in batches, task 0 always kept.
		if len(ids) > 10 || ids[0] != 0 || ids[len(ids)-1] != 25 {
			t.Errorf("remembered tasks %v: want at most 10, running task 0 first, the latest (25) last", ids)
		}
		if d.ForgottenTasks != 26-len(ids) || d.CompleteTasks != 25 || d.ActiveTasks != 1 || d.RunTime != 25*time.Second {
			t.Errorf("forgotten %d, complete %d, active %d, run time %v: want %d, 25, 1, 25s",
				d.ForgottenTasks, d.CompleteTasks, d.ActiveTasks, d.RunTime, 26-len(ids))
		}
	})
	t.Run("jobs and stages: finished ones go, running ones stay", func(t *testing.T) {
		evs := []events.Event{appStart(), &events.JobStart{JobID: 1}, &events.StageSubmitted{JobID: 1, StageID: 0}}
		for j := int64(2); j <= 6; j++ {
			evs = append(evs, &events.JobStart{JobID: j}, &events.StageSubmitted{JobID: j, StageID: int(j)},
				&events.StageCompleted{StageID: int(j)}, &events.JobEnd{JobID: j})
		}
		s := feed(Options{RetainedJobs: 2, RetainedStages: 2}, evs...)
		var jobs []int64
		for _, j := range s.Jobs() {
			jobs = append(jobs, j.ID)
		}
		var stages []int
		for _, st := range s.Stages() {
			stages = append(stages, st.ID)
		}
		if diff := cmp.Diff([]int64{6, 1}, jobs); diff != "" {
			t.Errorf("jobs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int{6, 0}, stages); diff != "" {
			t.Errorf("stages (-want +got):\n%s", diff)
		}
	})
}

func TestExecutors(t *testing.T) {
	s := feed(Options{RetainedDeadExecutors: 1},
		appStart(),
		&events.ExecutorPlaced{Executor: 1, Pod: "wc-exec-1", Node: "node-a", Phase: "Pending"},
		&events.ExecutorAdded{Executor: 1, Address: "10.0.0.5:7079", Pod: "wc-exec-1", Cores: 2},
		&events.ExecutorPlaced{Executor: 1, Pod: "wc-exec-1", Node: "node-a", Phase: "Running"},
		&events.ExecutorAdded{Executor: 2, Address: "10.0.0.6:7079", Pod: "wc-exec-2", Cores: 2},
		&events.ExecutorPlaced{Executor: 3, Pod: "wc-exec-3", Phase: "Pending"},
		&events.JobStart{JobID: 1}, &events.StageSubmitted{JobID: 1, StageID: 0, NumTasks: 2},
		start(1, 0, 0, 0, 1), start(2, 0, 1, 0, 1),
		end(1, 0, 0, 0, 1, events.TaskSuccess, "", 2*time.Second, events.TaskMetrics{InputBytes: 5, ShuffleWriteBytes: 9}),
		&events.ExecutorRemoved{Executor: 2, Reason: "the pod was deleted", ExitCode: 143},
		&events.ExecutorPlaced{Executor: 4, Pod: "wc-exec-4", Phase: "Failed"}, // 12: ended before it registered
	)
	want := []Executor{
		{ID: executorid.Driver, HostPort: "host1", State: ExecutorActive, Added: sec(0)},
		{ID: 1, HostPort: "10.0.0.5:7079", Pod: "wc-exec-1", Node: "node-a", Phase: "Running", State: ExecutorActive, Cores: 2,
			Added: sec(2), ActiveTasks: 1, CompletedTasks: 1, TotalTasks: 2, TaskTime: 2 * time.Second, InputBytes: 5, ShuffleWrite: 9},
		{ID: 3, Pod: "wc-exec-3", Phase: "Pending", State: ExecutorPending},
		{ID: 4, Pod: "wc-exec-4", Phase: "Failed", State: ExecutorDead, Removed: sec(12)},
	}
	// Executor 2 died first and only one dead executor is kept.
	if diff := cmp.Diff(want, s.Executors()); diff != "" {
		t.Errorf("Executors (-want +got):\n%s", diff)
	}
	if got := s.Allocation().ExecutorsRemoved; got != 1 {
		t.Errorf("ExecutorsRemoved = %d, want 1", got)
	}
}

func TestAllocation(t *testing.T) {
	evs := []events.Event{appStart()}
	for i := 1; i <= 4; i++ {
		evs = append(evs, &events.AllocationRound{Target: 5, Running: i, Pending: 5 - i, Gated: 1, Created: 1, Resent: i % 2,
			DeletedLost: 1, Waiting: fmt.Sprintf("ResourceQuota pods%d", i), Latency: time.Duration(i) * time.Millisecond})
	}
	evs = append(evs, &events.AllocationRound{Target: 5, Running: 5, Report: "executors: 5 running"},
		&events.PodCreated{Executor: 1}, &events.PodCreated{Executor: 2, Err: "forbidden"},
		&events.TargetChanged{Target: 3, Backlog: 7, Reason: "backlog for 1s"}, &events.TargetChanged{Target: 6, Backlog: 20, Reason: "backlog"})
	s := feed(Options{RetainedRounds: 3}, evs...)
	got := s.Allocation()
	var running []int
	for _, r := range got.RecentRounds {
		running = append(running, r.Running)
	}
	if diff := cmp.Diff([]int{5, 4, 3}, running); diff != "" {
		t.Errorf("recent rounds' Running, newest first (-want +got):\n%s", diff)
	}
	got.RecentRounds = nil
	var targets []int
	for _, c := range got.TargetChanges {
		targets = append(targets, c.Target)
	}
	if diff := cmp.Diff([]int{6, 3}, targets); diff != "" {
		t.Errorf("target changes, newest first (-want +got):\n%s", diff)
	}
	got.TargetChanges = nil
	want := Allocation{Rounds: 5, Target: 5, Running: 5, PodsCreated: 1, CreateErrors: 1, Resent: 2, DeletedLost: 4,
		Report: "executors: 5 running", ReportTime: sec(5), LastRound: sec(5), DynamicTarget: 6, Backlog: 20}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Allocation (-want +got):\n%s", diff)
	}
}

func TestAppAndConf(t *testing.T) {
	s := feed(Options{}, appStart(), &events.JobStart{JobID: 1}, &events.AppEnd{Err: "boom"})
	want := App{ID: "drover-1", Name: "wc", Master: "local-cluster[2,1,256]", User: "me", DeployMode: "client", DriverHost: "host1",
		Start: sec(0), End: sec(2), Ended: true, Err: "boom", LastUpdated: sec(2)}
	if diff := cmp.Diff(want, s.App()); diff != "" {
		t.Errorf("App (-want +got):\n%s", diff)
	}
	wantConf := []Property{{"spark.app.name", "wc"}, {"spark.password", "*********(redacted)"}}
	if diff := cmp.Diff(wantConf, s.Conf()); diff != "" {
		t.Errorf("Conf (-want +got):\n%s", diff)
	}
	if v, ok := s.ConfValue("spark.app.name"); !ok || v != "wc" {
		t.Errorf("ConfValue(spark.app.name) = %q, %v", v, ok)
	}
}

// TestReadsWhileHandling runs readers against a writer; with -race it
// shows that snapshots share nothing with the store.
func TestReadsWhileHandling(t *testing.T) {
	s := New(Options{RetainedTasks: 50})
	s.Handle(appStart())
	s.Handle(&events.JobStart{JobID: 1})
	s.Handle(&events.StageSubmitted{JobID: 1, StageID: 0, NumTasks: 1000})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, j := range s.Jobs() {
					j.KilledTasksSummary["x"]++ // a copy: must not race with the store
				}
				if d, ok := s.Stage(0, 0); ok {
					_ = d.Summary(APIQuantiles)
				}
				_ = s.Executors()
				_ = s.Allocation()
			}
		})
	}
	for i := range 1000 {
		s.Handle(start(int64(i), 0, i, 0, 0))
		s.Handle(end(int64(i), 0, i, 0, 0, events.TaskKilled, "r", time.Millisecond, events.TaskMetrics{}))
		s.Handle(&events.AllocationRound{Target: i})
	}
	close(stop)
	wg.Wait()
	if j, _ := s.Job(1); j.KilledTasks != 1000 || j.KilledTasksSummary["x"] != 0 {
		t.Errorf("job 1: %d killed, summary %v; want 1000 and no reader's change", j.KilledTasks, j.KilledTasksSummary)
	}
}

func TestCompletedIndicesCountEachPartitionOnce(t *testing.T) {
	s := feed(Options{}, appStart(), &events.JobStart{JobID: 1}, &events.StageSubmitted{JobID: 1, StageID: 0, NumTasks: 70},
		start(1, 0, 65, 0, 0), start(2, 0, 65, 1, 0), start(3, 0, 0, 0, 0),
		end(1, 0, 65, 0, 0, events.TaskSuccess, "", time.Second, events.TaskMetrics{}),
		end(2, 0, 65, 1, 0, events.TaskSuccess, "", time.Second, events.TaskMetrics{}),
		end(3, 0, 0, 0, 0, events.TaskSuccess, "", time.Second, events.TaskMetrics{}),
		end(3, 0, 0, 0, 0, events.TaskSuccess, "", time.Second, events.TaskMetrics{}),  // a duplicate end
		end(4, 0, 99, 0, 0, events.TaskSuccess, "", time.Second, events.TaskMetrics{}), // no such partition
	)
	st, _ := s.Stage(0, 0)
	j, _ := s.Job(1)
	if st.CompletedIndices != 2 || j.CompletedIndices != 2 || st.CompleteTasks != 4 || st.ActiveTasks != 0 {
		t.Errorf("stage: %d indices, %d complete, %d active; job: %d indices; want 2, 4, 0 and 2",
			st.CompletedIndices, st.CompleteTasks, st.ActiveTasks, j.CompletedIndices)
	}
}

// BenchmarkTaskEvents measures a task through the store, what the UI's
// consumer does per task at the scheduler's pace, for a stage of 100,000
// tasks (Spark's retention) launched a few at a time on each executor:
// "apart" a start and an end, "together" the one TaskEnd with its Launch
// the scheduler sends for a task that ends within its StartDelay. The
// events are the scheduler's to allocate: they are reused.
func BenchmarkTaskEvents(b *testing.B) {
	for _, together := range []bool{false, true} {
		b.Run(map[bool]string{false: "apart", true: "together"}[together], func(b *testing.B) {
			const tasks = 100_000
			var s *Store
			var start events.TaskStart
			var end events.TaskEnd
			b.ReportAllocs()
			i := tasks
			for b.Loop() {
				if i == tasks {
					b.StopTimer()
					s = New(Options{})
					s.Handle(appStart())
					s.Handle(&events.JobStart{JobID: 1})
					s.Handle(&events.StageSubmitted{JobID: 1, StageID: 0, NumTasks: tasks})
					i = 0
					b.StartTimer()
				}
				executor := executorid.ID(1 + i/8%4)
				end = events.TaskEnd{TaskID: int64(i), Partition: i, Executor: executor, State: events.TaskSuccess,
					Duration: time.Microsecond, Metrics: events.TaskMetrics{ResultBytes: 1}}
				if together {
					end.Launch = t0
				} else {
					start = events.TaskStart{TaskID: int64(i), Partition: i, Executor: executor}
					s.HandleAll([]events.Event{&start})
				}
				s.HandleAll([]events.Event{&end})
				i++
			}
		})
	}
}

// TestReplayedEventLog feeds one store live events and another the same
// events written to and read back from the event log's JSON, as a history
// server does: both must show the same application.
func TestReplayedEventLog(t *testing.T) {
	evs := []events.Event{appStart(),
		&events.ExecutorPlaced{Executor: 1, Pod: "wc-exec-1", Node: "node-a", Phase: "Running"},
		&events.ExecutorAdded{Executor: 1, Address: "10.0.0.5:7079", Pod: "wc-exec-1", Cores: 2},
		&events.AllocationRound{Target: 2, Running: 1, Pending: 1, Created: 2, Waiting: "ResourceQuota pods", Latency: time.Millisecond},
		&events.PodCreated{Executor: 1}, &events.TargetChanged{Target: 2, Backlog: 3, Reason: "backlog"},
		&events.JobStart{JobID: 1, Name: "Count"}, &events.StageSubmitted{JobID: 1, StageID: 0, Name: "map", NumTasks: 2, ParentShuffles: []int{4}},
		start(1, 0, 0, 0, 1), start(2, 0, 1, 0, 1),
		end(1, 0, 0, 0, 1, events.TaskSuccess, "", time.Second, events.TaskMetrics{ShuffleWriteBytes: 10, SpillBytes: 3}),
		end(2, 0, 1, 0, 1, events.TaskFailed, "boom\nstack", time.Second, events.TaskMetrics{}),
		&events.StageCompleted{StageID: 0, Err: "boom"}, &events.JobEnd{JobID: 1, Err: "boom"},
		&events.ExecutorRemoved{Executor: 1, Reason: "the pod was deleted", ExitCode: 143}, &events.AppEnd{Err: "boom"},
	}
	live := feed(Options{}, evs...)
	replayed := New(Options{})
	for _, e := range evs {
		line, err := events.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := events.Unmarshal(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		replayed.Handle(back)
	}
	want, got := view(live), view(replayed)
	if want.Stage.Tasks == nil || want.Allocation.Rounds != 1 || !want.App.Ended {
		t.Fatalf("the live store missed events: %+v", want)
	}
	// JSON keeps instants, not Go's monotonic clock readings or zones.
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("replayed store differs from the live one (-live +replayed):\n%s", diff)
	}
}

// storeView is what a store shows of an application with one stage.
type storeView struct {
	App        App
	Conf       []Property
	Jobs       []Job
	Stages     []Stage
	Stage      StageDetail
	Executors  []Executor
	Allocation Allocation
}

func view(s *Store) storeView {
	st, _ := s.Stage(0, 0)
	return storeView{s.App(), s.Conf(), s.Jobs(), s.Stages(), st, s.Executors(), s.Allocation()}
}

// A TaskEnd with its Launch time (a start the scheduler did not publish
// on its own) shows as its TaskStart and TaskEnd handed in apart would,
// while the others run, and once all ended.
func TestTaskEndWithItsStart(t *testing.T) {
	head := []events.Event{appStart(), &events.ExecutorAdded{Executor: 1, Address: "10.0.0.5:7079", Cores: 2},
		&events.ExecutorAdded{Executor: 2, Address: "10.0.0.6:7079", Cores: 2},
		&events.JobStart{JobID: 1}, &events.StageSubmitted{JobID: 1, StageID: 0, NumTasks: 4}}
	starts := []*events.TaskStart{start(1, 0, 0, 0, 1), start(2, 0, 1, 0, 2), start(3, 0, 2, 0, 1), start(4, 0, 3, 0, 2)}
	ends := []*events.TaskEnd{
		end(1, 0, 0, 0, 1, events.TaskSuccess, "", time.Second, events.TaskMetrics{ShuffleWriteBytes: 10}),
		end(2, 0, 1, 0, 2, events.TaskFailed, "boom", time.Second, events.TaskMetrics{}),
		end(3, 0, 2, 0, 1, events.TaskKilled, "stage cancelled", time.Second, events.TaskMetrics{}),
		end(4, 0, 3, 0, 2, events.TaskSuccess, "", time.Second, events.TaskMetrics{ResultBytes: 3}),
	}
	for i := range starts {
		starts[i].Time = sec(10 + i)
		ends[i].Time = sec(20 + i)
	}
	apart, together := New(Options{}), New(Options{})
	for i, e := range head {
		setTime(e, sec(i))
		apart.Handle(e)
		together.Handle(e)
	}
	for _, s := range starts {
		apart.Handle(s)
	}
	together.Handle(starts[3]) // task 4 runs on: its start came on its own
	for i, e := range ends[:3] {
		apart.Handle(e)
		c := *e
		c.Launch = starts[i].Time
		together.Handle(&c)
	}
	equalTimes := cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })
	if diff := cmp.Diff(view(apart), view(together), cmpopts.EquateEmpty(), equalTimes); diff != "" {
		t.Errorf("while task 4 runs (-apart +together):\n%s", diff)
	}
	apart.Handle(ends[3])
	together.Handle(ends[3])
	if v := view(together); v.Stage.CompleteTasks != 2 || v.Stage.FailedTasks != 1 || v.Stage.KilledTasks != 1 || v.Stage.ActiveTasks != 0 {
		t.Errorf("stage after all ended: %+v", v.Stage.Stage)
	}
	if diff := cmp.Diff(view(apart), view(together), cmpopts.EquateEmpty(), equalTimes); diff != "" {
		t.Errorf("once all ended (-apart +together):\n%s", diff)
	}
}

// TestTaskRecords covers what the compact task records keep apart: metrics
// of tasks ending out of launch order across trims, reasons, ends whose
// start was lost (out of id order) and duplicate ends.
func TestTaskRecords(t *testing.T) {
	evs := []events.Event{appStart(), &events.ExecutorAdded{Executor: 1, Address: "10.0.0.9:7079"},
		&events.JobStart{JobID: 1}, &events.StageSubmitted{JobID: 1, StageID: 0, NumTasks: 40}}
	m := func(i int) events.TaskMetrics { return events.TaskMetrics{ResultBytes: int64(100 + i)} }
	// Tasks start in pairs and end in reverse, every third with metrics;
	// 10 are kept, so the store trims many times.
	for i := 0; i < 30; i += 2 {
		evs = append(evs, start(int64(i), 0, i, 0, 1), start(int64(i+1), 0, i+1, 0, 1))
		for _, k := range []int{i + 1, i} {
			var mk events.TaskMetrics
			if k%3 == 0 {
				mk = m(k)
			}
			evs = append(evs, end(int64(k), 0, k, 0, 1, events.TaskSuccess, "", time.Second, mk))
		}
	}
	// 31's start is lost and it ends before 30, whose start is lost too;
	// then 31 ends again.
	evs = append(evs, end(31, 0, 31, 0, 1, events.TaskKilled, "speculation", time.Second, events.TaskMetrics{}),
		end(30, 0, 30, 0, 1, events.TaskFailed, "boom", 2*time.Second, m(30)),
		end(31, 0, 31, 0, 1, events.TaskFailed, "again", time.Second, events.TaskMetrics{}))
	s := feed(Options{RetainedTasks: 10}, evs...)
	d, _ := s.Stage(0, 0)
	var got []Task
	for _, task := range d.Tasks {
		if task.ID >= 24 {
			got = append(got, task)
		}
	}
	var want []Task
	for i := 24; i < 30; i++ {
		at := sec(4 + i/2*4 + i%2) // starts of pair i/2
		w := Task{ID: int64(i), Partition: i, Executor: 1, Host: "10.0.0.9", Launched: at, Duration: time.Second,
			Status: events.TaskSuccess, Ended: sec(4 + i/2*4 + 2 + 1 - i%2)}
		if i%3 == 0 {
			w.Metrics = m(i)
		}
		want = append(want, w)
	}
	end31, end30 := sec(len(evs)-3), sec(len(evs)-2)
	// In id order, whatever the order of their ends.
	want = append(want,
		Task{ID: 30, Partition: 30, Executor: 1, Host: "10.0.0.9", Launched: end30.Add(-2 * time.Second), Ended: end30,
			Duration: 2 * time.Second, Status: events.TaskFailed, Reason: "boom", Metrics: m(30)},
		Task{ID: 31, Partition: 31, Executor: 1, Host: "10.0.0.9", Launched: end31.Add(-time.Second), Ended: end31,
			Duration: time.Second, Status: events.TaskKilled, Reason: "speculation"})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	if d.KilledTasks != 1 || d.FailedTasks != 1 || d.ActiveTasks != 0 {
		t.Errorf("killed %d, failed %d, active %d: want 1, 1, 0", d.KilledTasks, d.FailedTasks, d.ActiveTasks)
	}
}

func TestPackedMetrics(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var b []byte
	var want []events.TaskMetrics
	var offs []int
	for range 1000 {
		var m events.TaskMetrics
		for _, f := range metricFields(&m) {
			switch r.IntN(3) {
			case 1:
				*f = r.Int64N(5000)
			case 2:
				*f = r.Int64() - r.Int64()
			}
		}
		offs = append(offs, len(b))
		b = packMetrics(b, &m)
		want = append(want, m)
	}
	for i, off := range offs {
		if got := unpackMetrics(b[off:]); got != want[i] {
			t.Fatalf("metrics %d: unpacked %+v, packed %+v", i, got, want[i])
		}
		if end := off + metricsLen(b[off:]); (i+1 < len(offs) && end != offs[i+1]) || (i+1 == len(offs) && end != len(b)) {
			t.Fatalf("metrics %d: length %d does not reach the next", i, end-off)
		}
	}
}

// TestStageTasks checks the pages and distributions read from the packed
// tasks against the same done on all of Stage's tasks.
func TestStageTasks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	evs := []events.Event{appStart(), &events.ExecutorAdded{Executor: 3, Address: "10.0.0.3:7079"},
		&events.JobStart{JobID: 1}, &events.StageSubmitted{JobID: 1, StageID: 0, NumTasks: 60}}
	states := []string{events.TaskSuccess, events.TaskSuccess, events.TaskSuccess, events.TaskFailed, events.TaskKilled}
	var running []int64
	for i := range 60 {
		evs = append(evs, start(int64(i), 0, i, 0, executorid.ID(r.IntN(4))))
		running = append(running, int64(i))
		// End a random running task, now and then, so ends come out of
		// launch order; five stay running.
		for len(running) > 5 && r.IntN(3) > 0 {
			k := r.IntN(len(running))
			id := running[k]
			running = slices.Delete(running, k, k+1)
			state := states[r.IntN(len(states))]
			m := events.TaskMetrics{ResultBytes: r.Int64N(5000), ShuffleReadBytes: r.Int64N(3) * r.Int64N(1<<40)}
			evs = append(evs, end(id, 0, int(id), 0, 1, state, "why "+state, time.Duration(r.IntN(4))*time.Second, m))
		}
	}
	s := feed(Options{RetainedTasks: 40}, evs...)
	all, _ := s.Stage(0, 0)
	if all.Remembered != len(all.Tasks) || len(all.Tasks) > 40 || len(all.Tasks) < 30 || all.ForgottenTasks == 0 {
		t.Fatalf("remembered %d, %d tasks, %d forgotten: want 30 to 40 remembered and some forgotten", all.Remembered, len(all.Tasks), all.ForgottenTasks)
	}
	ok := func(status string) bool { return status == events.TaskSuccess || status == TaskRunning }
	tests := map[string]struct {
		q    TaskQuery
		want func([]Task) []Task
	}{
		"all by id": {TaskQuery{Length: -1}, func(ts []Task) []Task { return ts }},
		"latest 7": {TaskQuery{Order: ByIDDesc, Length: 7}, func(ts []Task) []Task {
			slices.Reverse(ts)
			return ts[:7]
		}},
		"by runtime, page 2": {TaskQuery{Order: ByRuntime, Offset: 10, Length: 10}, func(ts []Task) []Task {
			slices.SortStableFunc(ts, func(a, b Task) int { return stdcmp.Compare(a.Duration, b.Duration) })
			return ts[10:20]
		}},
		"by runtime, longest, successful or running": {TaskQuery{Order: ByRuntimeDesc, Status: ok, Length: 5}, func(ts []Task) []Task {
			ts = slices.DeleteFunc(ts, func(t Task) bool { return !ok(t.Status) })
			slices.SortStableFunc(ts, func(a, b Task) int { return stdcmp.Compare(b.Duration, a.Duration) })
			return ts[:5]
		}},
		"past the end": {TaskQuery{Offset: 100, Length: 10}, func([]Task) []Task { return []Task{} }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.q.Quantiles = APIQuantiles
			got, dist, found := s.StageTasks(0, 0, tc.q)
			if !found {
				t.Fatal("stage 0.0 not found")
			}
			if diff := cmp.Diff(tc.want(slices.Clone(all.Tasks)), got.Tasks); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(all.Summary(APIQuantiles), dist); diff != "" {
				t.Errorf("distribution (-want +got):\n%s", diff)
			}
			if got.Remembered != all.Remembered || got.Failures == nil {
				t.Errorf("remembered %d, failures %v: want %d and the failures", got.Remembered, got.Failures, all.Remembered)
			}
		})
	}
	if _, _, found := s.StageTasks(0, 1, TaskQuery{}); found {
		t.Error("StageTasks(0, 1) found an attempt that never ran")
	}
}

// TestTaskLog round-trips records whose fields jump about, as the
// differences the log stores can be of any sign and size.
func TestTaskLog(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var l taskLog
	var want []taskRec
	for range 2000 {
		us := func() int64 { return (r.Int64() >> r.IntN(64)) / 1e3 * 1e3 } // times are kept to the microsecond
		rec := taskRec{id: r.Int64() >> r.IntN(64), partition: r.Int32() >> r.IntN(32), attempt: r.Int32N(4),
			executor: executorid.ID(r.Int64N(1000)), launched: us(), ended: us(),
			duration: time.Duration(us()), status: uint8(r.IntN(256)), fetchFailed: r.IntN(2) == 0,
			metrics: events.TaskMetrics{ResultBytes: r.Int64N(1 << 20), SpillBytes: -r.Int64N(3)}}
		l.add(&rec)
		want = append(want, rec)
	}
	d := l.reader()
	var got []taskRec
	for d.next(true) {
		got = append(got, d.r)
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(taskRec{})); diff != "" {
		t.Errorf("records (-added +read):\n%s", diff)
	}
	if l.n != len(want) {
		t.Errorf("n = %d, want %d", l.n, len(want))
	}
	// Forgetting drops whole chunks and re-encodes the rest of one: in
	// steps that end inside chunks and on their bounds.
	forgotten := 0
	for _, n := range []int{1, 7, l.chunks[0].n - 8, l.chunks[1].n, 333, 0, 1000} {
		var dropped []int64
		l.forget(n, func(r *taskRec) { dropped = append(dropped, r.id) })
		var ids []int64
		for _, r := range want[forgotten : forgotten+n] {
			ids = append(ids, r.id)
		}
		forgotten += n
		got = got[:0]
		for d := l.reader(); d.next(true); {
			got = append(got, d.r)
		}
		if diff := cmp.Diff(want[forgotten:], got, cmp.AllowUnexported(taskRec{}), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("after forgetting %d (-want +got):\n%s", forgotten, diff)
		}
		if diff := cmp.Diff(ids, dropped); diff != "" || l.n != len(want)-forgotten {
			t.Fatalf("forgetting %d: n = %d, dropped (-want +got):\n%s", n, l.n, diff)
		}
	}
	// A record added after forgetting follows the last one.
	l.add(&want[0])
	got = got[:0]
	for d := l.reader(); d.next(true); {
		got = append(got, d.r)
	}
	if diff := cmp.Diff(append(slices.Clone(want[forgotten:]), want[0]), got, cmp.AllowUnexported(taskRec{})); diff != "" {
		t.Errorf("after adding one (-want +got):\n%s", diff)
	}
}

// TestTaskLogIsCompact: the ended tasks of a stage of short tasks, as
// BenchmarkObservabilityDriverRSS runs, take about 11 bytes each.
func TestTaskLogIsCompact(t *testing.T) {
	var l taskLog
	for i := range 100_000 {
		at := t0.Add(time.Duration(i) * 30 * time.Microsecond).UnixNano()
		l.add(&taskRec{id: int64(i), partition: int32(i), executor: executorid.ID(1 + i%4), launched: at,
			ended: at + int64(200*time.Microsecond), duration: 57 * time.Microsecond, status: statusSuccess,
			metrics: events.TaskMetrics{ResultBytes: 1017}})
	}
	if perTask := float64(l.bytes()) / float64(l.n); perTask > 11.5 {
		t.Errorf("%.2f bytes per task, want at most 11.5", perTask)
	}
	var chunked int
	for _, c := range l.chunks {
		chunked += cap(c.b)
	}
	if chunked > l.bytes()+maxChunk {
		t.Errorf("chunks hold %d bytes for %d of records: want less than a chunk unused", chunked, l.bytes())
	}
}
