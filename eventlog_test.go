package drover

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/history"
)

// readLog replays the one event log in dir.
func readLog(t *testing.T, dir string) (eventlog.Log, []events.Event) {
	t.Helper()
	logs, err := eventlog.List(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1 {
		t.Fatalf("%d event logs in %s, want 1: %+v", len(logs), dir, logs)
	}
	var got []events.Event
	st, err := eventlog.Replay(context.Background(), logs[0], func(e events.Event) { got = append(got, e) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Truncated || st.Unknown > 0 {
		t.Errorf("replay stats %+v, want a whole log of known events", st)
	}
	return logs[0], got
}

// count counts events by type name, and task ends by state.
func count(evs []events.Event) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		n[events.Name(e)]++
		if te, ok := e.(*events.TaskEnd); ok {
			n["TaskEnd "+te.State]++
		}
	}
	return n
}

// The event log of an application holds every event of its stream: read
// back, it is what a consumer of the live stream saw, from AppStart to
// AppEnd, for a job that succeeds and one that fails.
func TestEventLogReplaysTheApplication(t *testing.T) {
	lines := generatedLines(2000)
	for _, tc := range []struct {
		name string
		conf []string
		// suffix is the log's file (or, rolled, directory) name after the
		// application id.
		prefix, suffix string
	}{
		{"defaults: rolled, snappy", nil, "eventlog_v2_", ""},
		{"one zstd file", []string{"spark.eventLog.rolling.enabled=false", "spark.eventLog.compression.codec=zstd"}, "", ".zstd"},
		{"one gzip file", []string{"spark.eventLog.rolling.enabled=false", "spark.eventLog.compression.codec=gzip"}, "", ".gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			conf := append([]string{"spark.eventLog.enabled=true", "spark.eventLog.dir=" + dir}, tc.conf...)
			var rec recordEvents
			var appID string
			runJob(t, "local-cluster[2,1,256]", func(ctx *Context) error {
				rec.subscribe(ctx)
				appID = ctx.AppID()
				counts, err := ReduceByKey(FlatMap(Parallelize(ctx, lines, 4), testWords), testSum, 3).Collect()
				if err != nil {
					return err
				}
				if diff := gocmp.Diff(referenceWordCount(lines), countsMap(t, counts)); diff != "" {
					t.Errorf("word count (-want +got):\n%s", diff)
				}
				_, err = RunPartitions(ctx, square, []int{1, 2, 3})
				return err
			}, conf...)
			l, got := readLog(t, dir)
			if want := tc.prefix + appID + tc.suffix; !strings.HasSuffix(l.Path, "/"+want) || l.InProgress {
				t.Errorf("log %s (in progress: %v), want a finished %s", l.Path, l.InProgress, want)
			}
			if start, ok := got[0].(*events.AppStart); !ok || start.AppID != appID {
				t.Errorf("first event %#v, want AppStart of %s", got[0], appID)
			}
			if end, ok := got[len(got)-1].(*events.AppEnd); !ok || end.Err != "" {
				t.Errorf("last event %#v, want AppEnd without error", got[len(got)-1])
			}
			// The test's consumer subscribed once the application ran:
			// from there on it saw what the log holds.
			if len(rec.events) < 10 || len(rec.events) > len(got) {
				t.Fatalf("%d events seen live, %d in the log", len(rec.events), len(got))
			}
			if diff := gocmp.Diff(byTaskWithinRuns(rec.events), byTaskWithinRuns(got[len(got)-len(rec.events):])); diff != "" {
				t.Errorf("the log's events after the application started (-live +log):\n%s", diff)
			}
			n := count(got)
			want := map[string]int{"JobStart": 2, "JobEnd": 2, "StageSubmitted": 3, "StageCompleted": 3,
				"TaskStart": 4 + 3 + 3, "TaskEnd": 4 + 3 + 3, "TaskEnd SUCCESS": 4 + 3 + 3}
			for k, v := range want {
				if n[k] != v {
					t.Errorf("%d %s events, want %d (all: %v)", n[k], k, v, n)
				}
			}
		})
	}
}

func TestEventLogOfAFailedApplication(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	code := runDriver([]string{"--master", "local-cluster[1,2,256]", "--conf", "spark.task.maxFailures=2", "--conf", "drover.log.level=error",
		"--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.dir=" + dir}, &stderr,
		func(ctx *Context) error {
			_, err := RunPartitions(ctx, fails, []string{"ok", "bad", "fine"})
			return err
		})
	if code != 1 {
		t.Fatalf("exit code %d, want 1:\n%s", code, stderr.String())
	}
	_, got := readLog(t, dir)
	end, ok := got[len(got)-1].(*events.AppEnd)
	if !ok || !strings.Contains(end.Err, "bad record: bad") {
		t.Fatalf("last event %#v, want AppEnd with the task's panic", got[len(got)-1])
	}
	var stageErr, jobErr string
	var failedReasons []string
	for _, e := range got {
		switch e := e.(type) {
		case *events.StageCompleted:
			stageErr = e.Err
		case *events.JobEnd:
			jobErr = e.Err
		case *events.TaskEnd:
			if e.State == events.TaskFailed {
				failedReasons = append(failedReasons, e.Reason)
				if e.Partition != 1 {
					t.Errorf("partition %d failed, want only partition 1 (\"bad\")", e.Partition)
				}
			}
		}
	}
	if stageErr == "" || jobErr == "" {
		t.Errorf("stage error %q, job error %q; want both", stageErr, jobErr)
	}
	// spark.task.maxFailures=2: the bad partition's two attempts.
	if len(failedReasons) != 2 || !strings.Contains(failedReasons[0], "panic: bad record: bad") {
		t.Errorf("failed tasks' reasons %q, want the panic twice", failedReasons)
	}
}

var testNoop = Register("test.noop", func(*TaskContext, int) (int, error) { return 0, nil })

// BenchmarkEventLog100kTasks runs a job of 100,000 no-op tasks on
// local-cluster[4,1,512] without and with the event log (its defaults:
// rolled, snappy), for the throughput of each, and measures the log: its
// size as stored (the budget is 30 MB), uncompressed, and its
// events, every one of which must reach it.
//
//	go test -run '^$' -bench EventLog100k -benchtime 1x .
func BenchmarkEventLog100kTasks(b *testing.B) {
	const tasks = 100_000
	inputs := make([]int, tasks)
	for _, enabled := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[enabled], func(b *testing.B) {
			var elapsed time.Duration
			for b.Loop() {
				dir := b.TempDir()
				var stderr bytes.Buffer
				var took time.Duration
				code := runDriver([]string{"--master", "local-cluster[4,1,512]", "--conf", "drover.log.level=warn",
					"--conf", "spark.ui.enabled=false", "--conf", "spark.ui.showConsoleProgress=false",
					"--conf", "spark.eventLog.enabled=" + strconv.FormatBool(enabled), "--conf", "spark.eventLog.dir=" + dir}, &stderr,
					func(ctx *Context) error {
						start := time.Now()
						_, err := RunPartitions(ctx, testNoop, inputs)
						took = time.Since(start)
						return err
					})
				if code != 0 {
					b.Fatalf("exit code %d:\n%s", code, stderr.String())
				}
				elapsed += took
				if !enabled {
					continue
				}
				logs, err := eventlog.List(context.Background(), dir, nil)
				if err != nil || len(logs) != 1 {
					b.Fatalf("List: %v, %v", logs, err)
				}
				var raw int64
				var n int
				var evs []events.Event
				if _, err := eventlog.Replay(context.Background(), logs[0], func(e events.Event) {
					line, _ := events.Marshal(e)
					raw += int64(len(line)) + 1
					n++
					if _, ok := e.(*events.TaskEnd); !ok {
						evs = append(evs, e) // the few others, and TaskStarts
					}
				}); err != nil {
					b.Fatal(err)
				}
				if c := count(evs); n-len(evs) != tasks || c["TaskStart"] != tasks || c["AppEnd"] != 1 {
					b.Fatalf("the log has %d task ends and %v: it lost events", n-len(evs), c)
				}
				b.ReportMetric(float64(logs[0].Size)/1e6, "MB-stored")
				b.ReportMetric(float64(raw)/1e6, "MB-uncompressed")
				b.ReportMetric(float64(n), "events")
				if logs[0].Size > 30e6 {
					b.Errorf("the event log of %d tasks has %d bytes compressed, over the 30 MB budget", tasks, logs[0].Size)
				}
			}
			b.ReportMetric(float64(tasks*b.N)/elapsed.Seconds(), "tasks/s")
		})
	}
}

// The history server shows, from their event logs, the applications of a
// directory after their drivers ended: one that succeeded and one that
// failed, through Spark's REST API and the pages.
func TestHistoryServerOfFinishedApplications(t *testing.T) {
	dir := t.TempDir()
	logConf := []string{"spark.eventLog.enabled=true", "spark.eventLog.dir=" + dir}
	lines := generatedLines(2000)
	var okID, failedID string
	runJob(t, "local-cluster[2,1,256]", func(ctx *Context) error {
		okID = ctx.AppID()
		_, err := ReduceByKey(FlatMap(Parallelize(ctx, lines, 4), testWords), testSum, 3).Count()
		return err
	}, logConf...)
	var stderr bytes.Buffer
	code := runDriver([]string{"--master", "local-cluster[1,2,256]", "--conf", "spark.task.maxFailures=2", "--conf", "drover.log.level=error",
		"--conf", logConf[0], "--conf", logConf[1]}, &stderr,
		func(ctx *Context) error {
			failedID = ctx.AppID()
			_, err := RunPartitions(ctx, fails, []string{"ok", "bad", "fine"})
			return err
		})
	if code != 1 {
		t.Fatalf("exit code %d, want 1:\n%s", code, stderr.String())
	}

	s, err := history.New(history.Options{Dir: dir, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	getJSON := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s", path, resp.Status, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, body)
		}
	}

	var apps []struct {
		ID       string `json:"id"`
		Attempts []struct {
			Completed bool `json:"completed"`
		} `json:"attempts"`
	}
	getJSON("/api/v1/applications?status=completed", &apps)
	var got []string
	for _, a := range apps {
		got = append(got, a.ID)
	}
	slices.Sort(got)
	want := []string{okID, failedID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("completed applications %v, want %v", got, want)
	}

	type job struct {
		Status            string `json:"status"`
		NumTasks          int    `json:"numTasks"`
		NumCompletedTasks int    `json:"numCompletedTasks"`
		NumFailedTasks    int    `json:"numFailedTasks"`
	}
	type stage struct {
		StageID            int    `json:"stageId"`
		Status             string `json:"status"`
		NumCompleteTasks   int    `json:"numCompleteTasks"`
		NumFailedTasks     int    `json:"numFailedTasks"`
		FailureReason      string `json:"failureReason"`
		ShuffleReadBytes   int64  `json:"shuffleReadBytes"`
		ShuffleWriteBytes  int64  `json:"shuffleWriteBytes"`
		ShuffleReadRecords int64  `json:"shuffleReadRecords"`
	}
	var jobs []job
	getJSON("/api/v1/applications/"+okID+"/jobs", &jobs)
	if diff := gocmp.Diff([]job{{Status: "SUCCEEDED", NumTasks: 7, NumCompletedTasks: 7}}, jobs); diff != "" {
		t.Errorf("the word count's jobs (-want +got):\n%s", diff)
	}
	var stages []stage
	getJSON("/api/v1/applications/"+okID+"/stages", &stages)
	slices.SortFunc(stages, func(a, b stage) int { return a.StageID - b.StageID })
	if len(stages) != 2 || stages[0].Status != "COMPLETE" || stages[1].Status != "COMPLETE" ||
		stages[0].ShuffleWriteBytes == 0 || stages[0].ShuffleWriteBytes != stages[1].ShuffleReadBytes {
		t.Errorf("the word count's stages %+v, want two complete ones, the second reading what the first wrote", stages)
	}

	getJSON("/api/v1/applications/"+failedID+"/jobs", &jobs)
	if len(jobs) != 1 || jobs[0].Status != "FAILED" || jobs[0].NumFailedTasks != 2 {
		t.Errorf("the failed application's jobs %+v, want one FAILED with two failed tasks", jobs)
	}
	getJSON("/api/v1/applications/"+failedID+"/stages", &stages)
	if len(stages) != 1 || stages[0].Status != "FAILED" || stages[0].NumFailedTasks != 2 || !strings.Contains(stages[0].FailureReason, "bad record") {
		t.Errorf("the failed application's stages %+v, want one FAILED stage naming the panic", stages)
	}
	var executors []struct {
		ID string `json:"id"`
	}
	getJSON("/api/v1/applications/"+okID+"/allexecutors", &executors)
	if len(executors) < 2 {
		t.Errorf("the word count's executors %+v, want its two at least", executors)
	}
	for _, page := range []string{"/", "/history/" + okID + "/jobs/", "/history/" + failedID + "/stages/", "/history/" + okID + "/executors/"} {
		resp, err := http.Get(srv.URL + page)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", page, resp.Status)
		}
	}
}

// byTaskWithinRuns orders each run of task events between two other events
// by task, its start first: the event log writes a task's start and end on
// one line when both came between two flushes, which may reorder task
// events among themselves, never across another event.
func byTaskWithinRuns(evs []events.Event) []events.Event {
	out := slices.Clone(evs)
	key := func(e events.Event) (int64, int, bool) {
		switch e := e.(type) {
		case *events.TaskStart:
			return e.TaskID, 0, true
		case *events.TaskEnd:
			return e.TaskID, 1, true
		}
		return 0, 0, false
	}
	for i := 0; i < len(out); {
		j := i
		for j < len(out) {
			if _, _, ok := key(out[j]); !ok {
				break
			}
			j++
		}
		slices.SortStableFunc(out[i:j], func(a, b events.Event) int {
			ta, ka, _ := key(a)
			tb, kb, _ := key(b)
			return cmp.Or(cmp.Compare(ta, tb), cmp.Compare(ka, kb))
		})
		i = j + 1
	}
	return out
}
