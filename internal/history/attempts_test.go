package history

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/events"
)

// attemptEvents is appEvents of attempt id of application "drover-1",
// started after later: a driver restarted in its pod.
func attemptEvents(id string, after time.Duration, ended bool) []events.Event {
	evs := appEvents("drover-1", false, ended)
	evs[0].(*events.AppStart).AttemptID = id
	for _, e := range evs {
		h := reflect.ValueOf(e).Elem().FieldByName("Header").Addr().Interface().(*events.Header)
		h.Time = h.Time.Add(after)
	}
	return evs
}

// attemptServer serves the logs a driver restarted once leaves: attempt 1
// in progress (its driver was killed), attempt 2 finished; beside them a
// driver that cannot restart, app-plain.
func attemptServer(t *testing.T, rolling bool) (*Server, *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	writeLog(t, dir, attemptEvents("1", 0, false), rolling)
	writeLog(t, dir, attemptEvents("2", time.Minute, true), rolling)
	writeLog(t, dir, appEvents("app-plain", false, true), rolling)
	s, err := New(Options{Dir: dir, Version: "test", Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// attemptJSON is an element of an application's "attempts".
type attemptJSON struct {
	AttemptID string `json:"attemptId"`
	Completed bool   `json:"completed"`
	StartTime string `json:"startTime"`
	SparkUser string `json:"sparkUser"`
}

type appJSON struct {
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	Attempts []attemptJSON `json:"attempts"`
}

var (
	attempt1  = attemptJSON{AttemptID: "1", Completed: false, StartTime: "2026-11-24T12:00:00.000GMT", SparkUser: "alice"}
	attempt2  = attemptJSON{AttemptID: "2", Completed: true, StartTime: "2026-11-24T12:01:00.000GMT", SparkUser: "alice"}
	restarted = appJSON{ID: "drover-1", Name: "wc-drover-1", Attempts: []attemptJSON{attempt2, attempt1}}
	plain     = appJSON{ID: "app-plain", Name: "wc-app-plain", Attempts: []attemptJSON{
		{Completed: true, StartTime: "2026-11-24T12:00:00.000GMT", SparkUser: "alice"}}}
)

// TestDriverRestartHistoryAPI: an application's attempts are listed as
// Spark's REST API lists them, the newest first, and each is served under
// /api/v1/applications/<appId>/<attemptId>/; without an attempt id, the
// newest answers.
func TestDriverRestartHistoryAPI(t *testing.T) {
	for _, rolling := range []bool{false, true} {
		_, srv := attemptServer(t, rolling)
		for _, tc := range []struct {
			path string
			want any
		}{
			{"/api/v1/applications?status=completed", []appJSON{plain, restarted}},
			{"/api/v1/applications?status=running", []appJSON{}},
			{"/api/v1/applications/drover-1", restarted},
			{"/api/v1/applications/app-plain", plain},
			{"/api/v1/applications/drover-1/1", attempt1},
			{"/api/v1/applications/drover-1/2/", attempt2},
		} {
			got := reflect.New(reflect.TypeOf(tc.want))
			// The applications are listed the most recently written
			// first: app-plain (or, written in the same tick, by name).
			if err := json.Unmarshal(get(t, srv, tc.path, http.StatusOK), got.Interface()); err != nil {
				t.Fatalf("GET %s: %v", tc.path, err)
			}
			if diff := cmp.Diff(tc.want, got.Elem().Interface()); diff != "" {
				t.Errorf("rolling %v: GET %s (-want +got):\n%s", rolling, tc.path, diff)
			}
		}
		type job struct {
			JobID  int64
			Status string
		}
		for _, tc := range []struct {
			path string
			want []job
		}{
			{"/api/v1/applications/drover-1/1/jobs", []job{{1, "RUNNING"}}},
			{"/api/v1/applications/drover-1/2/jobs", []job{{1, "SUCCEEDED"}}},
			{"/api/v1/applications/drover-1/jobs", []job{{1, "SUCCEEDED"}}},
			{"/api/v1/applications/app-plain/jobs", []job{{1, "SUCCEEDED"}}},
		} {
			if diff := cmp.Diff(tc.want, getJSON[[]job](t, srv, tc.path)); diff != "" {
				t.Errorf("rolling %v: GET %s (-want +got):\n%s", rolling, tc.path, diff)
			}
		}
		get(t, srv, "/api/v1/applications/drover-1/3/jobs", http.StatusNotFound)
		get(t, srv, "/api/v1/applications/app-plain/1", http.StatusNotFound)
	}
}

// TestDriverRestartHistoryPages: the list has a line per attempt with its
// id, and each attempt's pages are under /history/<appId>/<attemptId>/.
func TestDriverRestartHistoryPages(t *testing.T) {
	s, srv := attemptServer(t, false)
	for _, tc := range []struct{ path, location string }{
		{"/history/drover-1/1", "/history/drover-1/1/jobs/"},
		{"/history/drover-1/2/", "/history/drover-1/2/jobs/"},
		{"/history/drover-1/", "/history/drover-1/jobs/"},
	} {
		if diff := cmp.Diff(tc.location, string(get(t, srv, tc.path, http.StatusFound))); diff != "" {
			t.Errorf("GET %s redirects (-want +got):\n%s", tc.path, diff)
		}
	}
	page := string(get(t, srv, "/history/drover-1/1/jobs/", http.StatusOK))
	for _, want := range []string{`href="/history/drover-1/1/stages/"`, `href="/history/drover-1/1/jobs/job/?id=1"`, "Active Jobs (1)"} {
		if !strings.Contains(page, want) {
			t.Errorf("attempt 1's jobs page has no %s:\n%s", want, page)
		}
	}
	list := string(get(t, srv, "/", http.StatusOK))
	for _, want := range []string{"<th>Attempt ID</th>", `<a href="/history/drover-1/2/jobs/">drover-1</a></td>
<td>2</td>`, `<a href="/history/drover-1/1/jobs/">drover-1</a></td>
<td>1</td>`, `<a href="/history/app-plain/jobs/">app-plain</a></td>
<td></td>`} {
		if !strings.Contains(list, want) {
			t.Errorf("the list page has no %s:\n%s", want, list)
		}
	}
	got := s.Applications()
	for _, as := range got {
		for i := range as {
			as[i].Start, as[i].End = as[i].Start.UTC(), as[i].End.UTC()
		}
	}
	want := [][]Attempt{
		{{AppID: "app-plain", Status: "succeeded", Start: t0, End: t0.Add(10 * time.Millisecond)}},
		{{AppID: "drover-1", AttemptID: "2", Status: "succeeded", Start: t0.Add(time.Minute), End: t0.Add(time.Minute + 10*time.Millisecond)},
			{AppID: "drover-1", AttemptID: "1", Status: "incomplete", Start: t0}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Applications (-want +got):\n%s", diff)
	}
}

// TestNoAttemptsNoAttemptColumn: logs of drivers that cannot restart show
// no attempts, as before.
func TestNoAttemptsNoAttemptColumn(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, appEvents("app-ok", false, true), false)
	s, err := New(Options{Dir: dir, Version: "test", Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	if list := string(get(t, srv, "/", http.StatusOK)); strings.Contains(list, "Attempt ID") {
		t.Errorf("the list page shows attempts:\n%s", list)
	}
	if body := string(get(t, srv, "/api/v1/applications", http.StatusOK)); strings.Contains(body, "attemptId") {
		t.Errorf("the applications show attempt ids:\n%s", body)
	}
}
