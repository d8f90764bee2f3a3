package ui

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/objstore"
)

// keep writes text as the kept log of p in dir, as the process does.
func keep(t *testing.T, dir string, p keptlog.Process, text string) {
	t.Helper()
	if err := keptlog.WriteAll(context.Background(), keptlog.LocalSink(dir), p, []byte(text)); err != nil {
		t.Fatal(err)
	}
}

// keptApp is an application of three executors (the second removed, the
// fourth never registered) whose configuration is conf.
func keptApp(t *testing.T, conf map[string]string, opts Options) *UI {
	t.Helper()
	s := appstate.New(appstate.Options{})
	evs := []events.Event{
		&events.AppStart{AppID: "drover-kept", Name: "wordcount", Master: "k8s://https://kube:6443", DriverHost: "wc-driver", Conf: conf},
		&events.ExecutorAdded{Executor: 1, Address: "10.0.0.5:7079", Pod: "wc-exec-1", Cores: 2},
		&events.ExecutorAdded{Executor: 2, Address: "10.0.0.6:7079", Pod: "wc-exec-2", Cores: 2},
		&events.ExecutorAdded{Executor: 3, Address: "10.0.0.7:7079", Pod: "wc-exec-3", Cores: 2},
		&events.ExecutorPlaced{Executor: 4, Pod: "wc-exec-4", Phase: "Pending"},
		&events.JobStart{JobID: 1, Name: "count"},
		&events.StageSubmitted{JobID: 1, StageID: 0, Name: "count", NumTasks: 1},
		&events.TaskStart{TaskID: 1, StageID: 0, Executor: 1},
		&events.ExecutorRemoved{Executor: 2, Reason: "the pod was deleted", ExitCode: 137},
	}
	for i, e := range evs {
		stamp(e, t0.Add(time.Duration(i)*time.Second))
		s.Handle(e)
	}
	return New(s, opts)
}

func keptConf(dir string, more ...string) map[string]string {
	c := map[string]string{"spark.driver.log.persistToDfs.enabled": "true", "spark.driver.log.dfsDir": dir}
	for i := 0; i+1 < len(more); i += 2 {
		c[more[i]] = more[i+1]
	}
	return c
}

// executorLogsOf is executorLogs of each executor in /allexecutors.
func executorLogsOf(t *testing.T, u *UI) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, x := range getJSON(t, u, "/api/v1/applications/drover-kept/allexecutors").([]any) {
		m := x.(map[string]any)
		out[m["id"].(string)] = m["executorLogs"]
	}
	return out
}

// The Executors page and the REST API link every registered process's
// kept log, the driver's too, and the UI serves the bytes each wrote: the
// driver's attempts in order.
func TestKeptLogsLinksAndServes(t *testing.T) {
	dir := t.TempDir()
	exec1 := "executor 1 starts\nMARKER line of executor 1\n"
	keep(t, dir, keptlog.Process{AppID: "drover-kept", Executor: 1, Attempt: 1}, exec1)
	keep(t, dir, keptlog.Process{AppID: "drover-kept", Executor: 2, Attempt: 1}, "executor 2, killed mid-line")
	keep(t, dir, keptlog.Process{AppID: "drover-kept", Executor: executorid.Driver, Attempt: 1}, "driver 1: a\ndriver 1: b\n")
	keep(t, dir, keptlog.Process{AppID: "drover-kept", Executor: executorid.Driver, Attempt: 2}, "driver 2: c\ndriver 2: d\n")
	u := keptApp(t, keptConf(dir), Options{})

	code, page, _ := get(t, u, "/executors/")
	if code != http.StatusOK {
		t.Fatalf("GET /executors/: %d %s", code, page)
	}
	for _, want := range []string{`<a href="/logs/executor/driver">log</a>`, `<a href="/logs/executor/1">log</a>`,
		`<a href="/logs/executor/2">log</a>`, `<a href="/logs/executor/3">log</a>`, "<code>" + dir + "</code>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Executors page lacks %s", want)
		}
	}
	if strings.Contains(page, "/logs/executor/4") {
		t.Error("the executor that never registered has a log link")
	}
	log := func(id string) map[string]any { return map[string]any{"log": "/logs/executor/" + id} }
	if diff := cmp.Diff(map[string]any{"driver": log("driver"), "1": log("1"), "2": log("2"), "3": log("3")}, executorLogsOf(t, u)); diff != "" {
		t.Errorf("executorLogs (-want +got):\n%s", diff)
	}
	tasks := getJSON(t, u, "/api/v1/applications/drover-kept/stages/0/0/taskList").([]any)
	if diff := cmp.Diff(log("1"), tasks[0].(map[string]any)["executorLogs"]); diff != "" {
		t.Errorf("a task's executorLogs (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		path, want string
	}{
		{"/logs/executor/1", exec1},
		{"/logs/executor/2", "executor 2, killed mid-line"},
		{"/logs/executor/driver", "[drover: the driver (attempt 1) of application drover-kept]\ndriver 1: a\ndriver 1: b\n" +
			"[drover: the driver (attempt 2) of application drover-kept]\ndriver 2: c\ndriver 2: d\n"},
		{"/logs/executor/driver?attempt=2", "driver 2: c\ndriver 2: d\n"},
		{"/logs/executor/driver?tail=3", "[drover: the driver (attempt 1) of application drover-kept]\ndriver 1: b\n" +
			"[drover: the driver (attempt 2) of application drover-kept]\ndriver 2: c\ndriver 2: d\n"},
		{"/logs/executor/driver?tail=1", "driver 2: d\n"},
		{"/logs/executor/driver?tail=0", ""},
		{"/logs/executor/1?tail=1", "MARKER line of executor 1\n"},
	} {
		code, body, hdr := get(t, u, tc.path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d %s", tc.path, code, body)
			continue
		}
		if body != tc.want {
			t.Errorf("GET %s:\n%q\nwant\n%q", tc.path, body, tc.want)
		}
		if ct := hdr.Get("Content-Type"); ct != "text/plain; charset=utf-8" || hdr.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: Content-Type %q, X-Content-Type-Options %q", tc.path, ct, hdr.Get("X-Content-Type-Options"))
		}
	}

	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/logs/executor/3", http.StatusNotFound, "no log of executor 3 is kept in " + filepath.Join(dir, "drover-kept") + " (yet)"},
		{"/logs/executor/driver?attempt=3", http.StatusNotFound, "no log of the driver (attempt 3) is kept"},
		{"/logs/executor/0", http.StatusBadRequest, `executor id "0"`},
		{"/logs/executor/x", http.StatusBadRequest, `executor id "x"`},
		{"/logs/executor/1?tail=-2", http.StatusBadRequest, `bad tail "-2"`},
		{"/logs/executor/1?attempt=0", http.StatusBadRequest, `bad attempt "0"`},
	} {
		code, body, _ := get(t, u, tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) || strings.Count(body, "\n") != 1 {
			t.Errorf("GET %s: %d %q, want %d with %q on one line", tc.path, code, body, tc.code, tc.want)
		}
	}
}

// spark.ui.custom.executor.log.url takes precedence over the kept log
// wherever it gives a link: the executors', not the driver's.
func TestKeptLogsCustomURLTakesPrecedence(t *testing.T) {
	u := keptApp(t, keptConf(t.TempDir(), "spark.ui.custom.executor.log.url", "https://logs.example/{{POD_NAME}}"), Options{})
	_, page, _ := get(t, u, "/executors/")
	for _, want := range []string{`<a href="https://logs.example/wc-exec-1">log</a>`, `<a href="/logs/executor/driver">log</a>`,
		"unless <code>spark.ui.custom.executor.log.url</code> gives it one"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Executors page lacks %s", want)
		}
	}
	if strings.Contains(page, `"/logs/executor/1"`) {
		t.Error("executor 1 links its kept log, not the custom URL")
	}
	custom := func(pod string) map[string]any { return map[string]any{"log": "https://logs.example/" + pod} }
	want := map[string]any{"driver": map[string]any{"log": "/logs/executor/driver"},
		"1": custom("wc-exec-1"), "2": custom("wc-exec-2"), "3": custom("wc-exec-3")}
	if diff := cmp.Diff(want, executorLogsOf(t, u)); diff != "" {
		t.Errorf("executorLogs (-want +got):\n%s", diff)
	}
}

// Without persistence there are no links, and the handler says why; with
// drover.executor.log.dfsDir=none only the driver's log is linked.
func TestKeptLogsNotKept(t *testing.T) {
	u := keptApp(t, map[string]string{"spark.app.name": "wordcount"}, Options{})
	if _, page, _ := get(t, u, "/executors/"); strings.Contains(page, "/logs/executor/") {
		t.Error("an application that keeps no logs has kept-log links")
	}
	if diff := cmp.Diff(map[string]any{"driver": map[string]any{}, "1": map[string]any{}, "2": map[string]any{}, "3": map[string]any{}},
		executorLogsOf(t, u)); diff != "" {
		t.Errorf("executorLogs (-want +got):\n%s", diff)
	}
	code, body, _ := get(t, u, "/logs/executor/1")
	if code != http.StatusNotFound || body != "this application keeps no logs (spark.driver.log.persistToDfs.enabled is not true)\n" {
		t.Errorf("GET /logs/executor/1: %d %q", code, body)
	}

	dir := t.TempDir()
	keep(t, dir, keptlog.Process{AppID: "drover-kept", Executor: executorid.Driver, Attempt: 1}, "driver\n")
	u = keptApp(t, keptConf(dir, "drover.executor.log.dfsDir", "none"), Options{})
	want := map[string]any{"driver": map[string]any{"log": "/logs/executor/driver"}, "1": map[string]any{}, "2": map[string]any{}, "3": map[string]any{}}
	if diff := cmp.Diff(want, executorLogsOf(t, u)); diff != "" {
		t.Errorf("executorLogs (-want +got):\n%s", diff)
	}
	if code, body, _ := get(t, u, "/logs/executor/driver"); code != http.StatusOK || body != "driver\n" {
		t.Errorf("GET /logs/executor/driver: %d %q", code, body)
	}
	code, body, _ = get(t, u, "/logs/executor/1")
	if code != http.StatusNotFound || body != "this application keeps no executor's log (drover.executor.log.dfsDir=none)\n" {
		t.Errorf("GET /logs/executor/1: %d %q", code, body)
	}

	// Before the application starts there is nothing to read.
	u = New(appstate.New(appstate.Options{}), Options{})
	if code, body, _ := get(t, u, "/logs/executor/driver"); code != http.StatusNotFound || !strings.Contains(body, "has not started") {
		t.Errorf("GET /logs/executor/driver before the start: %d %q", code, body)
	}
}

// A store that fails answers 502 with its reason: here the directory is a
// file.
func TestKeptLogsStoreError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	u := keptApp(t, keptConf(file), Options{})
	code, body, _ := get(t, u, "/logs/executor/1")
	if code != http.StatusBadGateway || !strings.Contains(body, "listing the kept logs of drover-kept") || strings.Count(body, "\n") != 1 {
		t.Errorf("GET /logs/executor/1: %d %q, want 502 with the store's error", code, body)
	}
}

// A server that mounts the UI under a path (the history server) gets its
// REST API's links under it; the pages' links stay from the root, for it
// to rewrite.
func TestKeptLogsBasePath(t *testing.T) {
	u := keptApp(t, keptConf(t.TempDir()), Options{BasePath: "/history/drover-kept/2"})
	if got := executorLogsOf(t, u)["1"]; !cmp.Equal(got, map[string]any{"log": "/history/drover-kept/2/logs/executor/1"}) {
		t.Errorf("executorLogs of executor 1: %v", got)
	}
	if _, page, _ := get(t, u, "/executors/"); !strings.Contains(page, `<a href="/logs/executor/1">log</a>`) {
		t.Error("the page's link is not from the UI's root")
	}
}

// Kept logs on s3:// are read with Options.ObjectStore, else with the
// application's settings without the credentials it carries redacted.
func TestKeptLogsObjectStore(t *testing.T) {
	conf := config.New().Set("spark.hadoop.fs.s3a.endpoint", "http://s3.cluster:9000").
		Set("spark.hadoop.fs.s3a.access.key", config.RedactedValue).Set("spark.hadoop.fs.s3a.secret.key", config.RedactedValue)
	u := New(appstate.New(appstate.Options{}), Options{})
	got := u.objectStore(conf)
	if got.Endpoint != "http://s3.cluster:9000" || got.AccessKey != "" || got.SecretKey != "" {
		t.Errorf("from the application's settings: endpoint %q, access key %q, secret key %q", got.Endpoint, got.AccessKey, got.SecretKey)
	}
	own := objstore.Config{Endpoint: "http://127.0.0.1:7070", AccessKey: "a", SecretKey: "s"}
	u = New(appstate.New(appstate.Options{}), Options{ObjectStore: &own})
	if got := u.objectStore(conf); got != own {
		t.Errorf("with Options.ObjectStore: %+v", got)
	}
}

// A store that fails once the answer has begun can only be told in it: a
// last line says where the log stops.
func TestKeptLogsErrorMidway(t *testing.T) {
	rec := httptest.NewRecorder()
	p := keptlog.Process{AppID: "drover-kept", Executor: 3, Attempt: 1}
	writeKept(rec, []keptPart{{p, io.MultiReader(strings.NewReader("first line\npartial"), iotest.ErrReader(errors.New("connection reset")))}})
	want := "first line\npartial\n[drover: the log of executor 3 (attempt 1) of application drover-kept stops here: connection reset]\n"
	if rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Errorf("got %d %q, want 200 %q", rec.Code, rec.Body.String(), want)
	}
}
