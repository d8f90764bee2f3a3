package ui

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// fixture is a Kubernetes application seen half-way: job 1 done, job 2
// failed, job 3 running; three executors, one of them lost; allocation
// rounds waiting on a quota.
func fixture(t *testing.T, extra ...events.Event) (*appstate.Store, *UI) {
	t.Helper()
	s := appstate.New(appstate.Options{})
	evs := []events.Event{
		&events.AppStart{AppID: "drover-abc", Name: "wordcount", Master: "k8s://https://kube:6443", User: "ana", DeployMode: "cluster",
			DriverHost: "wc-driver", Conf: map[string]string{
				"spark.app.name":                                  "wordcount",
				"spark.kubernetes.namespace":                      "spark",
				"spark.hadoop.fs.s3a.secret.key":                  "*********(redacted)",
				"spark.ui.custom.executor.log.url":                "https://logs.example/{{KUBERNETES_NAMESPACE}}/{{POD_NAME}}?app={{APP_ID}}&id={{EXECUTOR_ID}}&team={{TEAM}}",
				"spark.executorEnv.SPARK_EXECUTOR_ATTRIBUTE_TEAM": "data",
			}},
		&events.ExecutorPlaced{Executor: 1, Pod: "wc-exec-1", Node: "node-a", Phase: "Running"},
		&events.ExecutorAdded{Executor: 1, Address: "10.0.0.5:7079", Pod: "wc-exec-1", Cores: 2},
		&events.ExecutorAdded{Executor: 2, Address: "10.0.0.6:7079", Pod: "wc-exec-2", Cores: 2},
		&events.ExecutorPlaced{Executor: 3, Pod: "wc-exec-3", Phase: "Pending"},
		&events.AllocationRound{Target: 4, Running: 2, Pending: 2, Gated: 1, Created: 3, Waiting: "ResourceQuota pods3",
			Report: "executors: 2 running, 0 pending, 2 held back by ResourceQuota pods3", Latency: 12 * time.Millisecond},
		&events.PodCreated{Executor: 1}, &events.PodCreated{Executor: 2}, &events.PodCreated{Executor: 3, Err: "exceeded quota"},
		&events.TargetChanged{Target: 4, Backlog: 9, Reason: "backlog for 1s"},

		&events.JobStart{JobID: 1, Name: "Count at main.go:10"},
		&events.StageSubmitted{JobID: 1, StageID: 0, Name: "textFile map", NumTasks: 2},
		&events.TaskStart{TaskID: 1, StageID: 0, Partition: 0, Executor: 1},
		&events.TaskStart{TaskID: 2, StageID: 0, Partition: 1, Executor: 2},
		&events.TaskEnd{TaskID: 1, StageID: 0, Partition: 0, Executor: 1, State: events.TaskSuccess, Duration: 1500 * time.Millisecond,
			Metrics: events.TaskMetrics{InputBytes: 2048, ShuffleWriteBytes: 3 << 20, ShuffleWriteRecords: 30}},
		&events.TaskEnd{TaskID: 2, StageID: 0, Partition: 1, Executor: 2, State: events.TaskFailed, Reason: "executor 2 lost: the pod was deleted",
			Duration: 0},
		&events.ExecutorRemoved{Executor: 2, Reason: "the pod was deleted", ExitCode: 143},
		&events.TaskStart{TaskID: 3, StageID: 0, Partition: 1, Attempt: 1, Executor: 1},
		&events.TaskEnd{TaskID: 3, StageID: 0, Partition: 1, Attempt: 1, Executor: 1, State: events.TaskSuccess, Duration: 2500 * time.Millisecond,
			Metrics: events.TaskMetrics{ShuffleWriteBytes: 1 << 20, ShuffleWriteRecords: 10, SpillBytes: 4096}},
		&events.StageCompleted{StageID: 0},
		&events.JobEnd{JobID: 1},

		&events.JobStart{JobID: 2, Name: "Collect <script>alert(1)</script>"},
		&events.StageSubmitted{JobID: 2, StageID: 1, Name: "reduce", NumTasks: 1},
		&events.TaskStart{TaskID: 4, StageID: 1, Executor: 1},
		&events.TaskEnd{TaskID: 4, StageID: 1, Executor: 1, State: events.TaskFailed, Reason: "panic: bad record\ngoroutine 7 [running]:\nmain.parse()", Duration: time.Second},
		&events.StageCompleted{StageID: 1, Err: "task 0 failed 1 times: panic: bad record"},
		&events.JobEnd{JobID: 2, Err: "task 0 failed 1 times: panic: bad record"},

		&events.JobStart{JobID: 3, Name: "SaveAsTextFile at main.go:30"},
		&events.StageSubmitted{JobID: 3, StageID: 2, Name: "save", NumTasks: 4},
		&events.TaskStart{TaskID: 5, StageID: 2, Partition: 0, Executor: 1},
	}
	for i, e := range append(evs, extra...) {
		stamp(e, t0.Add(time.Duration(i)*time.Second))
		s.Handle(e)
	}
	u := New(s, Options{Clock: clocktesting.NewFakePassiveClock(t0.Add(time.Hour)), Version: "v0.9.0", Refresh: 3 * time.Second})
	return s, u
}

// stamp sets an event's time through the Header every event embeds.
func stamp(e events.Event, t time.Time) {
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
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b), rec.Result().Header
}

func TestPages(t *testing.T) {
	_, u := fixture(t)
	tests := map[string]struct {
		path    string
		want    []string
		notWant []string
	}{
		"jobs": {path: "/jobs/", want: []string{
			`<meta http-equiv="refresh" content="3">`, "Active Jobs (1)", "Completed Jobs (1)", "Failed Jobs (1)",
			`<a href="/jobs/job/?id=3">3</a>`, "SaveAsTextFile at main.go:30", "Count at main.go:10",
			"Collect &lt;script&gt;alert(1)&lt;/script&gt;", "task 0 failed 1 times: panic: bad record",
			"0/4", "2/2 (1 failed)", "<strong>User:</strong> ana", `id="app-status">running`,
			`<a href="/executors/">Executors</a>`, `<a href="/allocation/">Allocation</a>`,
		}, notWant: []string{"<script>alert"}},
		"job": {path: "/jobs/job/?id=1", want: []string{
			"Job 1", "Count at main.go:10", `<a href="/stages/stage/?id=0&amp;attempt=0">textFile map</a>`, "<td>2.0 KiB</td>", "4.0 MiB", "2/2 (1 failed)",
		}},
		"stages": {path: "/stages/", want: []string{
			"Active Stages (1)", "Completed Stages (1)", "Failed Stages (1)", ">save</a>", ">reduce</a>",
			"task 0 failed 1 times: panic: bad record", "2.0 KiB",
		}},
		"stage with quantiles and failures": {path: "/stages/stage/?id=0&attempt=0", want: []string{
			"Stage 0 (attempt 0)", "Summary Metrics for 2 Completed Tasks",
			"<th>Min</th><th>25th percentile</th><th>Median</th><th>75th percentile</th><th>Max</th>",
			"<tr><td>Duration</td><td>1.5 s</td><td>1.5 s</td><td>2.5 s</td><td>2.5 s</td><td>2.5 s</td></tr>",
			"<tr><td>Shuffle Write Size</td><td>1.0 MiB</td><td>1.0 MiB</td><td>3.0 MiB</td><td>3.0 MiB</td><td>3.0 MiB</td></tr>",
			"<tr><td>Spill (Disk)</td><td>0 B</td><td>0 B</td><td>4.0 KiB</td><td>4.0 KiB</td><td>4.0 KiB</td></tr>",
			"Failed Tasks (1 failed, 0 killed)", "executor 2 lost: the pod was deleted", "Tasks (3 of 3 remembered",
		}},
		"a panic's stack folds": {path: "/stages/stage/?id=1", want: []string{
			"<details><summary>panic: bad record</summary><pre>panic: bad record\ngoroutine 7 [running]:\nmain.parse()</pre></details>",
		}},
		"stage of a running job": {path: "/stages/stage/?id=2", want: []string{"No task has succeeded yet.", "Running"}},
		"executors": {path: "/executors/", want: []string{
			`<td class="nowrap">wc-exec-1</td>`, `<td class="nowrap">node-a</td>`, "(pod Running)", "10.0.0.5:7079",
			`<a href="https://logs.example/spark/wc-exec-1?app=drover-abc&amp;id=1&amp;team=data">log</a>`,
			`<a href="https://logs.example/spark/wc-exec-2?app=drover-abc&amp;id=2&amp;team=data">log</a>`,
			"the pod was deleted (exit code 143)", `class="status Pending">Pending`, `class="status Dead">Dead`,
			`<tr id="summary-Active"><td>Active</td><td>2</td><td>2</td><td>1</td><td>1</td><td>2</td><td>5.0 s</td><td>0 B</td><td>4.0 MiB</td></tr>`,
			`<tr id="summary-Dead"><td>Dead</td><td>1</td><td>2</td><td>0</td><td>1</td><td>0</td><td>0 ms</td>`,
			`<tr id="summary-Total"><td>Total</td><td>4</td><td>4</td><td>1</td><td>2</td><td>2</td><td>5.0 s</td>`,
		}, notWant: []string{"spark.ui.custom.executor.log.url</code> (placeholders"}},
		"allocation": {path: "/allocation/", want: []string{
			"<tbody><tr><td>4</td><td>2</td><td>2</td><td>1</td><td>2</td><td>1</td><td>0</td><td>0</td><td>0</td><td>1</td><td>1</td></tr></tbody>",
			"<strong>The allocator waits:</strong> ResourceQuota pods3", "2 held back by ResourceQuota pods3",
			"Latest rounds (1, newest first)", "12 ms", "<strong>Target:</strong> 4 executors", "backlog for 1s",
		}},
		"environment": {path: "/environment/", want: []string{
			"<td>spark.hadoop.fs.s3a.secret.key</td><td>*********(redacted)</td>", "<td>spark.kubernetes.namespace</td><td>spark</td>",
			"<td>drover version</td><td>v0.9.0</td>", "<td>Deploy mode</td><td>cluster</td>",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, body, hdr := get(t, u, tc.path)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", tc.path, code, body)
			}
			if ct := hdr.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: missing %q in:\n%s", tc.path, w, body)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(body, w) {
					t.Errorf("GET %s: unexpected %q", tc.path, w)
				}
			}
		})
	}
}

func TestPagesOfAFinishedApplication(t *testing.T) {
	_, u := fixture(t, &events.TaskEnd{TaskID: 5, StageID: 2, Executor: 1, State: events.TaskSuccess, Duration: time.Second},
		&events.StageCompleted{StageID: 2}, &events.JobEnd{JobID: 3}, &events.AppEnd{})
	_, body, _ := get(t, u, "/jobs/")
	if strings.Contains(body, "http-equiv") {
		t.Error("a finished application's page still reloads itself")
	}
	for _, w := range []string{"Active Jobs (0)", "Completed Jobs (2)", `id="app-status">succeeded`} {
		if !strings.Contains(body, w) {
			t.Errorf("missing %q", w)
		}
	}
}

func TestAllocationPageWithoutAllocator(t *testing.T) {
	s := appstate.New(appstate.Options{})
	s.Handle(&events.AppStart{AppID: "drover-1", Name: "pi", Master: "local-cluster[2,1,256]"})
	_, body, _ := get(t, New(s, Options{}), "/allocation/")
	if !strings.Contains(body, "No allocation rounds: under <code>local-cluster[2,1,256]</code>") {
		t.Errorf("allocation page without rounds:\n%s", body)
	}
}

func TestBadRequestsAndRouting(t *testing.T) {
	_, u := fixture(t)
	tests := map[string]struct {
		path string
		code int
		want string
	}{
		"root redirects":       {path: "/", code: http.StatusFound},
		"css":                  {path: "/static/drover.css", code: http.StatusOK, want: "nav a.active"},
		"unknown job":          {path: "/jobs/job/?id=42", code: http.StatusNotFound, want: "job 42 is unknown"},
		"bad job id":           {path: "/jobs/job/?id=x", code: http.StatusBadRequest, want: "want /jobs/job/?id=N"},
		"unknown stage":        {path: "/stages/stage/?id=9&attempt=1", code: http.StatusNotFound, want: "stage 9 attempt 1 is unknown"},
		"no such page":         {path: "/nope", code: http.StatusNotFound},
		"api of another app":   {path: "/api/v1/applications/other/jobs", code: http.StatusNotFound, want: "unknown app: other"},
		"api unknown job":      {path: "/api/v1/applications/drover-abc/jobs/99", code: http.StatusNotFound, want: "unknown job: 99"},
		"api unknown attempt":  {path: "/api/v1/applications/drover-abc/stages/0/5", code: http.StatusNotFound, want: "Found attempts: [0]"},
		"api bad quantiles":    {path: "/api/v1/applications/drover-abc/stages/0/0/taskSummary?quantiles=2", code: http.StatusBadRequest, want: "quantiles"},
		"api no summary yet":   {path: "/api/v1/applications/drover-abc/stages/2/0/taskSummary", code: http.StatusNotFound, want: "No tasks reported metrics"},
		"api bad sortBy":       {path: "/api/v1/applications/drover-abc/stages/0/0/taskList?sortBy=name", code: http.StatusBadRequest, want: "sortBy"},
		"api unknown stage id": {path: "/api/v1/applications/drover-abc/stages/77", code: http.StatusNotFound, want: "unknown stage: 77"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, body, _ := get(t, u, tc.path)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("GET %s = %d %q, want %d containing %q", tc.path, code, body, tc.code, tc.want)
			}
		})
	}
	u.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "up 1\n") }))
	if code, body, _ := get(t, u, "/metrics"); code != http.StatusOK || body != "up 1\n" {
		t.Errorf("a handler mounted with Handle: %d %q", code, body)
	}
}

// getJSON decodes an API answer into generic values, so field names are
// checked as a Spark client reads them.
func getJSON(t *testing.T, h http.Handler, path string) any {
	t.Helper()
	code, body, hdr := get(t, h, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if ct := hdr.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	return v
}

// pick keeps the named fields of a JSON object.
func pick(v any, keys ...string) map[string]any {
	m, _ := v.(map[string]any)
	out := map[string]any{}
	for _, k := range keys {
		val, ok := m[k]
		if !ok {
			val = "<absent>"
		}
		out[k] = val
	}
	return out
}

func TestAPI(t *testing.T) {
	_, u := fixture(t)
	const base = "/api/v1/applications/drover-abc"

	apps := getJSON(t, u, "/api/v1/applications").([]any)
	if len(apps) != 1 {
		t.Fatalf("applications: %v", apps)
	}
	attempt := apps[0].(map[string]any)["attempts"].([]any)[0]
	if diff := cmp.Diff(map[string]any{"startTime": "2026-11-22T10:00:00.000GMT", "endTime": "1969-12-31T23:59:59.999GMT",
		"completed": false, "sparkUser": "ana", "appSparkVersion": "v0.9.0", "duration": 0.0, "startTimeEpoch": float64(t0.UnixMilli()),
		"endTimeEpoch": -1.0},
		pick(attempt, "startTime", "endTime", "completed", "sparkUser", "appSparkVersion", "duration", "startTimeEpoch", "endTimeEpoch")); diff != "" {
		t.Errorf("application attempt (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(pick(apps[0], "id", "name"), pick(getJSON(t, u, base), "id", "name")); diff != "" {
		t.Errorf("/applications/{id} differs from the list (-list +one):\n%s", diff)
	}

	jobs := getJSON(t, u, base+"/jobs").([]any)
	if len(jobs) != 3 {
		t.Fatalf("jobs: %d, want 3", len(jobs))
	}
	job1 := getJSON(t, u, base+"/jobs/1")
	want := map[string]any{"jobId": 1.0, "name": "Count at main.go:10", "status": "SUCCEEDED", "stageIds": []any{0.0},
		"numTasks": 2.0, "numActiveTasks": 0.0, "numCompletedTasks": 2.0, "numFailedTasks": 1.0, "numKilledTasks": 0.0,
		"numCompletedIndices": 2.0, "numSkippedTasks": 0.0, "numActiveStages": 0.0, "numCompletedStages": 1.0,
		"numSkippedStages": 0.0, "numFailedStages": 0.0, "killedTasksSummary": map[string]any{}, "jobTags": []any{},
		"submissionTime": "2026-11-22T10:00:10.000GMT", "completionTime": "2026-11-22T10:00:20.000GMT"}
	if diff := cmp.Diff(want, pick(job1, keys(want)...)); diff != "" {
		t.Errorf("job 1 (-want +got):\n%s", diff)
	}
	if got := pick(jobs[0], "jobId", "status", "completionTime"); !cmp.Equal(got, map[string]any{"jobId": 3.0, "status": "RUNNING", "completionTime": "<absent>"}) {
		t.Errorf("newest job first, running, without completionTime: %v", got)
	}
	if running := getJSON(t, u, base+"/jobs?status=running").([]any); len(running) != 1 {
		t.Errorf("?status=running: %d jobs, want 1", len(running))
	}

	stages := getJSON(t, u, base+"/stages?status=failed").([]any)
	if diff := cmp.Diff(map[string]any{"stageId": 1.0, "status": "FAILED", "failureReason": "task 0 failed 1 times: panic: bad record",
		"numFailedTasks": 1.0, "schedulingPool": "default"},
		pick(stages[0], "stageId", "status", "failureReason", "numFailedTasks", "schedulingPool")); len(stages) != 1 || diff != "" {
		t.Errorf("failed stages (-want +got):\n%s", diff)
	}
	stage0 := getJSON(t, u, base+"/stages/0/0")
	want = map[string]any{"stageId": 0.0, "attemptId": 0.0, "status": "COMPLETE", "numTasks": 2.0, "numCompleteTasks": 2.0,
		"numFailedTasks": 1.0, "executorRunTime": 4000.0, "inputBytes": 2048.0, "shuffleWriteBytes": float64(4 << 20),
		"shuffleWriteRecords": 40.0, "diskBytesSpilled": 4096.0, "memoryBytesSpilled": 0.0, "name": "textFile map"}
	if diff := cmp.Diff(want, pick(stage0, keys(want)...)); diff != "" {
		t.Errorf("stage 0 (-want +got):\n%s", diff)
	}
	tasks := stage0.(map[string]any)["tasks"].(map[string]any)
	want = map[string]any{"taskId": 2.0, "index": 1.0, "attempt": 0.0, "partitionId": 1.0, "executorId": "2", "host": "10.0.0.6",
		"status": "FAILED", "errorMessage": "executor 2 lost: the pod was deleted", "duration": 0.0,
		"executorLogs": map[string]any{"log": "https://logs.example/spark/wc-exec-2?app=drover-abc&id=2&team=data"}}
	if diff := cmp.Diff(want, pick(tasks["2"], keys(want)...)); len(tasks) != 3 || diff != "" {
		t.Errorf("stage 0 has %d tasks; task 2 (-want +got):\n%s", len(tasks), diff)
	}
	execSum := stage0.(map[string]any)["executorSummary"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"succeededTasks": 2.0, "failedTasks": 0.0, "taskTime": 4000.0, "shuffleWrite": float64(4 << 20)},
		pick(execSum["1"], "succeededTasks", "failedTasks", "taskTime", "shuffleWrite")); diff != "" {
		t.Errorf("executor 1's summary in stage 0 (-want +got):\n%s", diff)
	}
	if attempts := getJSON(t, u, base+"/stages/0").([]any); len(attempts) != 1 {
		t.Errorf("/stages/0: %d attempts, want 1", len(attempts))
	}
	if _, ok := getJSON(t, u, base+"/stages/0/0?details=false").(map[string]any)["tasks"]; ok {
		t.Error("?details=false still lists tasks")
	}

	summary := getJSON(t, u, base+"/stages/0/0/taskSummary?quantiles=0,0.5,1")
	if diff := cmp.Diff(map[string]any{"quantiles": []any{0.0, 0.5, 1.0}, "duration": []any{1500.0, 2500.0, 2500.0},
		"diskBytesSpilled": []any{0.0, 4096.0, 4096.0}},
		pick(summary, "quantiles", "duration", "diskBytesSpilled")); diff != "" {
		t.Errorf("taskSummary (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"writeBytes": []any{float64(1 << 20), float64(3 << 20), float64(3 << 20)},
		"writeRecords": []any{10.0, 30.0, 30.0}, "writeTime": []any{0.0, 0.0, 0.0}},
		summary.(map[string]any)["shuffleWriteMetrics"]); diff != "" {
		t.Errorf("taskSummary shuffleWriteMetrics (-want +got):\n%s", diff)
	}
	list := getJSON(t, u, base+"/stages/0/0/taskList?sortBy=-runtime&length=2").([]any)
	var ids []any
	for _, task := range list {
		ids = append(ids, task.(map[string]any)["taskId"])
	}
	if diff := cmp.Diff([]any{3.0, 1.0}, ids); diff != "" {
		t.Errorf("taskList sorted by -runtime, 2 of them (-want +got):\n%s", diff)
	}

	active := getJSON(t, u, base+"/executors").([]any)
	all := getJSON(t, u, base+"/allexecutors").([]any)
	var activeIDs, allIDs []any
	for _, x := range active {
		activeIDs = append(activeIDs, x.(map[string]any)["id"])
	}
	for _, x := range all {
		allIDs = append(allIDs, x.(map[string]any)["id"])
	}
	if diff := cmp.Diff([]any{"driver", "1"}, activeIDs); diff != "" {
		t.Errorf("executors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"driver", "1", "2"}, allIDs); diff != "" {
		t.Errorf("allexecutors, pending pods left out (-want +got):\n%s", diff)
	}
	want = map[string]any{"id": "2", "hostPort": "10.0.0.6:7079", "isActive": false, "totalCores": 2.0, "maxTasks": 2.0,
		"failedTasks": 1.0, "completedTasks": 0.0, "totalTasks": 1.0, "removeReason": "the pod was deleted",
		"removeTime": "2026-11-22T10:00:16.000GMT", "addTime": "2026-11-22T10:00:03.000GMT",
		"executorLogs": map[string]any{"log": "https://logs.example/spark/wc-exec-2?app=drover-abc&id=2&team=data"}}
	if diff := cmp.Diff(want, pick(all[2], keys(want)...)); diff != "" {
		t.Errorf("executor 2 (-want +got):\n%s", diff)
	}
	if got := all[1].(map[string]any)["attributes"].(map[string]any)["POD_NAME"]; got != "wc-exec-1" {
		t.Errorf("executor 1's POD_NAME attribute = %v", got)
	}

	env := getJSON(t, u, base+"/environment").(map[string]any)
	props := env["sparkProperties"].([]any)
	if diff := cmp.Diff([]any{"spark.hadoop.fs.s3a.secret.key", "*********(redacted)"}, props[2]); len(props) != 5 || diff != "" {
		t.Errorf("environment sparkProperties %v; third (-want +got):\n%s", props, diff)
	}
	if _, ok := env["runtime"].(map[string]any)["javaVersion"]; !ok {
		t.Error("environment has no runtime.javaVersion")
	}
	if v := getJSON(t, u, "/api/v1/version"); !cmp.Equal(v, map[string]any{"spark": "v0.9.0"}) {
		t.Errorf("version = %v", v)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestLogLinks(t *testing.T) {
	tests := map[string]struct {
		template string
		conf     map[string]string
		x        appstate.Executor
		want     string
	}{
		"spark's two":               {template: "https://l/{{APP_ID}}/{{EXECUTOR_ID}}", x: appstate.Executor{ID: 7}, want: "https://l/app-1/7"},
		"pod and node":              {template: "https://l/{{POD_NAME}}@{{NODE_NAME}}", x: appstate.Executor{ID: 1, Pod: "p", Node: "n"}, want: "https://l/p@n"},
		"an unknown placeholder":    {template: "https://l/{{CONTAINER_ID}}", x: appstate.Executor{ID: 1}, want: ""},
		"pod not known yet":         {template: "https://l/{{POD_NAME}}", x: appstate.Executor{ID: 1}, want: ""},
		"no template":               {x: appstate.Executor{ID: 1}, want: ""},
		"the driver has none":       {template: "https://l/{{APP_ID}}", x: appstate.Executor{ID: executorid.Driver}, want: ""},
		"namespace defaults on k8s": {template: "https://l/{{KUBERNETES_NAMESPACE}}", x: appstate.Executor{ID: 1}, want: "https://l/default"},
		"an attribute from the pod is unknown here": {template: "https://l/{{HOST}}", x: appstate.Executor{ID: 1},
			conf: map[string]string{attributePrefix + "HOST": "$(SPARK_EXECUTOR_POD_IP)"}, want: ""},
		"a literal attribute": {template: "https://l/{{ZONE}}", x: appstate.Executor{ID: 1},
			conf: map[string]string{attributePrefix + "zone": "eu-1"}, want: "https://l/eu-1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conf := map[string]string{"spark.ui.custom.executor.log.url": tc.template}
			for k, v := range tc.conf {
				conf[k] = v
			}
			s := appstate.New(appstate.Options{})
			s.Handle(&events.AppStart{AppID: "app-1", Master: "k8s://https://kube:6443", Conf: conf})
			u := New(s, Options{})
			if got := u.logLinks().url(tc.x); got != tc.want {
				t.Errorf("log URL = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestListenTriesTheNextPorts(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	ln, err := Listen("127.0.0.1", port, 16, nil)
	if err != nil {
		t.Fatalf("Listen with retries: %v", err)
	}
	defer ln.Close()
	if got := ln.Addr().(*net.TCPAddr).Port; got <= port || got > port+16 {
		t.Errorf("bound port %d, want one of the 16 after the busy %d", got, port)
	}
	if _, err := Listen("127.0.0.1", port, 0, nil); err == nil || !strings.Contains(err.Error(), "spark.ui.port") {
		t.Errorf("Listen on a busy port without retries: %v, want an error naming spark.ui.port", err)
	}
}

func TestServeAndStop(t *testing.T) {
	_, u := fixture(t)
	ln, err := Listen("127.0.0.1", 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(ln, u, nil)
	url := "http://" + srv.Addr().String()
	resp, err := http.Get(url + "/api/v1/applications/drover-abc/executors")
	if err != nil {
		t.Fatal(err)
	}
	var xs []map[string]any
	err = json.NewDecoder(resp.Body).Decode(&xs)
	resp.Body.Close()
	if err != nil || len(xs) != 2 {
		t.Fatalf("executors over HTTP: %v, %d", err, len(xs))
	}
	if err := srv.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := http.Get(url + "/jobs/"); err == nil {
		t.Error("the server still answers after Stop")
	}
}
