package history

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/events"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func at(ms int) events.Header {
	return events.Header{Time: t0.Add(time.Duration(ms) * time.Millisecond)}
}

// app is the events of an application of one job of two tasks; the second
// task fails twice when failed is set, which fails the job and the
// application. Without an end, the application is still running.
func appEvents(id string, failed, ended bool) []events.Event {
	evs := []events.Event{
		&events.AppStart{Header: at(0), AppID: id, Name: "wc-" + id, User: "alice", Conf: map[string]string{"spark.app.name": "wc"}},
		&events.ExecutorAdded{Header: at(1), Executor: 1, Address: "127.0.0.1:7000", Cores: 2},
		&events.JobStart{Header: at(2), JobID: 1, Name: "count"},
		&events.StageSubmitted{Header: at(3), JobID: 1, StageID: 0, Name: "count", NumTasks: 2},
		&events.TaskStart{Header: at(4), TaskID: 0, Partition: 0, Executor: 1},
		&events.TaskEnd{Header: at(5), TaskID: 0, Partition: 0, Executor: 1, State: events.TaskSuccess, Duration: time.Millisecond,
			Metrics: events.TaskMetrics{ShuffleWriteBytes: 100}},
	}
	second := events.TaskSuccess
	if failed {
		second = events.TaskFailed
	}
	for attempt := range 2 {
		evs = append(evs,
			&events.TaskStart{Header: at(6), TaskID: int64(1 + attempt), Partition: 1, Attempt: attempt, Executor: 1},
			&events.TaskEnd{Header: at(7), TaskID: int64(1 + attempt), Partition: 1, Attempt: attempt, Executor: 1, State: second,
				Reason: map[bool]string{true: "panic: boom"}[failed], Duration: time.Millisecond})
		if !failed {
			break
		}
	}
	if !ended {
		return evs
	}
	var err string
	if failed {
		err = "job 1 failed: panic: boom"
	}
	return append(evs,
		&events.StageCompleted{Header: at(8), StageID: 0, Err: err},
		&events.JobEnd{Header: at(9), JobID: 1, Err: err},
		&events.AppEnd{Header: at(10), Err: err})
}

// writeLog writes evs as an application's event log in dir; the log of an
// application that did not end is what its killed driver left: in progress.
func writeLog(t *testing.T, dir string, evs []events.Event, rolling bool) {
	t.Helper()
	_, ended := evs[len(evs)-1].(*events.AppEnd)
	target := dir
	if !ended {
		dir = t.TempDir()
	}
	start := evs[0].(*events.AppStart)
	w, err := eventlog.Start(context.Background(), eventlog.Options{Dir: dir, AppID: start.AppID, AttemptID: start.AttemptID,
		Codec: "zstd", Rolling: rolling, MaxFileSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, e := range evs {
		w.Handle(e)
	}
	if ended {
		return
	}
	w.Flush()
	if err := os.CopyFS(target, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, srv *httptest.Server, path string, want int) []byte {
	t.Helper()
	// Redirects are checked, not followed.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %s, want %d:\n%s", path, resp.Status, want, b)
	}
	if want == http.StatusFound {
		return []byte(resp.Header.Get("Location"))
	}
	return b
}

func getJSON[T any](t *testing.T, srv *httptest.Server, path string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(get(t, srv, path, http.StatusOK), &v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return v
}

type appInfo struct {
	ID       string
	Name     string
	Attempts []struct {
		Completed bool
		SparkUser string
	}
}

func ids(apps []appInfo) []string {
	var out []string
	for _, a := range apps {
		out = append(out, a.ID)
	}
	slices.Sort(out)
	return out
}

func TestHistoryServer(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, appEvents("app-ok", false, true), true)
	writeLog(t, dir, appEvents("app-failed", true, true), false)
	writeLog(t, dir, appEvents("app-killed", false, false), true)
	clk := clocktesting.NewFakeClock(t0)
	s, err := New(Options{Dir: dir, Version: "test", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	all := getJSON[[]appInfo](t, srv, "/api/v1/applications")
	if diff := cmp.Diff([]string{"app-failed", "app-killed", "app-ok"}, ids(all)); diff != "" {
		t.Errorf("applications (-want +got):\n%s", diff)
	}
	for _, a := range all {
		if a.Name != "wc-"+a.ID || len(a.Attempts) != 1 || a.Attempts[0].SparkUser != "alice" || a.Attempts[0].Completed != (a.ID != "app-killed") {
			t.Errorf("application %+v", a)
		}
	}
	if got := ids(getJSON[[]appInfo](t, srv, "/api/v1/applications?status=completed")); !slices.Equal(got, []string{"app-failed", "app-ok"}) {
		t.Errorf("completed applications %v", got)
	}
	if got := ids(getJSON[[]appInfo](t, srv, "/api/v1/applications?status=running")); !slices.Equal(got, []string{"app-killed"}) {
		t.Errorf("running applications %v", got)
	}
	if got := getJSON[[]appInfo](t, srv, "/api/v1/applications?limit=1"); len(got) != 1 {
		t.Errorf("limit=1 gave %d applications", len(got))
	}
	get(t, srv, "/api/v1/applications?status=lost", http.StatusBadRequest)

	type job struct {
		JobID                             int64
		Status                            string
		NumTasks                          int
		NumCompletedTasks, NumFailedTasks int
	}
	for id, want := range map[string]job{
		"app-ok":     {JobID: 1, Status: "SUCCEEDED", NumTasks: 2, NumCompletedTasks: 2},
		"app-failed": {JobID: 1, Status: "FAILED", NumTasks: 2, NumCompletedTasks: 1, NumFailedTasks: 2},
		"app-killed": {JobID: 1, Status: "RUNNING", NumTasks: 2, NumCompletedTasks: 2},
	} {
		jobs := getJSON[[]job](t, srv, "/api/v1/applications/"+id+"/jobs")
		if diff := cmp.Diff([]job{want}, jobs); diff != "" {
			t.Errorf("%s jobs (-want +got):\n%s", id, diff)
		}
	}
	type stage struct {
		Status            string
		FailureReason     string
		ShuffleWriteBytes int64
	}
	stages := getJSON[[]stage](t, srv, "/api/v1/applications/app-failed/stages")
	if len(stages) != 1 || stages[0].Status != "FAILED" || !strings.Contains(stages[0].FailureReason, "boom") || stages[0].ShuffleWriteBytes != 100 {
		t.Errorf("app-failed's stages %+v", stages)
	}
	get(t, srv, "/api/v1/applications/nope/jobs", http.StatusNotFound)

	// The pages, under /history/<appId>/, link each other there.
	if loc := string(get(t, srv, "/history/app-ok", http.StatusFound)); loc != "/history/app-ok/jobs/" {
		t.Errorf("redirect to %q", loc)
	}
	if loc := string(get(t, srv, "/history/app-ok/", http.StatusFound)); loc != "/history/app-ok/jobs/" {
		t.Errorf("redirect to %q", loc)
	}
	page := string(get(t, srv, "/history/app-failed/jobs/", http.StatusOK))
	for _, want := range []string{`href="/history/app-failed/stages/"`, `href="/history/app-failed/jobs/job/?id=1"`, `href="/history/app-failed/static/drover.css"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the jobs page has no %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, `href="/jobs/`) {
		t.Errorf("the jobs page links outside its application:\n%s", page)
	}
	get(t, srv, "/history/app-failed/static/drover.css", http.StatusOK)
	get(t, srv, "/history/nope/jobs/", http.StatusNotFound)

	list := string(get(t, srv, "/", http.StatusOK))
	for _, want := range []string{`href="/history/app-ok/jobs/"`, "wc-app-failed", ">failed<", ">succeeded<", ">incomplete<"} {
		if !strings.Contains(list, want) {
			t.Errorf("the list page has no %s:\n%s", want, list)
		}
	}

	// A log written since is found when asked for (once the scan that
	// /history/nope/ forced is forcedRescanInterval old), and the list
	// shows it once the update interval has passed.
	writeLog(t, dir, appEvents("app-new", false, true), false)
	clk.Step(forcedRescanInterval)
	if got := getJSON[[]job](t, srv, "/api/v1/applications/app-new/jobs"); len(got) != 1 {
		t.Errorf("app-new's jobs: %+v", got)
	}
	writeLog(t, dir, appEvents("app-newer", false, true), false)
	if got := getJSON[[]appInfo](t, srv, "/api/v1/applications"); slices.Contains(ids(got), "app-newer") {
		t.Errorf("the list was read again before the update interval passed")
	}
	clk.Step(DefaultUpdateInterval)
	if got := ids(getJSON[[]appInfo](t, srv, "/api/v1/applications")); len(got) != 5 || !slices.Contains(got, "app-newer") {
		t.Errorf("applications after the update interval: %v", got)
	}
}

func TestMissingDirectory(t *testing.T) {
	if _, err := New(Options{Dir: filepath.Join(t.TempDir(), "nope")}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("New on a missing directory: %v", err)
	}
}
