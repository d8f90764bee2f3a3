package history

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/keptlog"
)

// keep writes text as the kept log of p in dir, as the process does.
func keep(t *testing.T, dir string, p keptlog.Process, text string) {
	t.Helper()
	if err := keptlog.WriteAll(context.Background(), keptlog.LocalSink(dir), p, []byte(text)); err != nil {
		t.Fatal(err)
	}
}

// keptHistory serves application drover-1, whose driver restarted once,
// and whose processes kept their logs: the driver's two attempts and
// executor 1's, a log larger than a page that ends with a marker line.
func keptHistory(t *testing.T) (srv *httptest.Server, exec1 string) {
	t.Helper()
	return keptHistoryReading(t, nil)
}

// keptHistoryReading is keptHistory with a server that reads kept logs
// from allow, or from the application's directory when allow is nil.
func keptHistoryReading(t *testing.T, allow []string) (srv *httptest.Server, exec1 string) {
	t.Helper()
	logs, kept := t.TempDir(), t.TempDir()
	for _, attempt := range []struct {
		id    string
		after time.Duration
		ended bool
	}{{"1", 0, false}, {"2", time.Minute, true}} {
		evs := attemptEvents(attempt.id, attempt.after, attempt.ended)
		evs[0].(*events.AppStart).Conf = map[string]string{"spark.app.name": "wc",
			"spark.driver.log.persistToDfs.enabled": "true", "spark.driver.log.dfsDir": "file://" + kept}
		writeLog(t, logs, evs, false)
	}
	var big strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&big, "executor 1 line %d of a long log\n", i)
	}
	big.WriteString("MARKER: the last line executor 1 wrote\n")
	keep(t, kept, keptlog.Process{AppID: "drover-1", Executor: 1, Attempt: 1}, big.String())
	keep(t, kept, keptlog.Process{AppID: "drover-1", Executor: executorid.Driver, Attempt: 1}, "driver attempt 1\n")
	keep(t, kept, keptlog.Process{AppID: "drover-1", Executor: executorid.Driver, Attempt: 2}, "driver attempt 2\n")

	if allow == nil {
		allow = []string{kept}
	}
	s, err := New(Options{Dir: logs, Version: "test", Clock: clocktesting.NewFakeClock(t0), KeptLogDirs: allow})
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, big.String()
}

// The history server links the kept logs of a finished application's
// processes, on its pages and in executorLogs, under the attempt's path,
// and serves their bytes: the pods are long gone.
func TestKeptLogsInTheHistoryServer(t *testing.T) {
	srv, exec1 := keptHistory(t)

	for page, prefix := range map[string]string{
		"/history/drover-1/executors/":   "/history/drover-1",
		"/history/drover-1/1/executors/": "/history/drover-1/1",
		"/history/drover-1/2/executors/": "/history/drover-1/2",
	} {
		body := string(get(t, srv, page, http.StatusOK))
		for _, id := range []string{"driver", "1"} {
			if want := `<a href="` + prefix + `/logs/executor/` + id + `">log</a>`; !strings.Contains(body, want) {
				t.Errorf("%s lacks %s", page, want)
			}
		}
	}

	type executor struct {
		ID           string
		ExecutorLogs map[string]string
	}
	for api, prefix := range map[string]string{
		"/api/v1/applications/drover-1/allexecutors":   "/history/drover-1/2",
		"/api/v1/applications/drover-1/1/allexecutors": "/history/drover-1/1",
	} {
		want := []executor{{"driver", map[string]string{"log": prefix + "/logs/executor/driver"}},
			{"1", map[string]string{"log": prefix + "/logs/executor/1"}}}
		if diff := cmp.Diff(want, getJSON[[]executor](t, srv, api)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", api, diff)
		}
	}

	// Every link the API gives serves the process's bytes.
	for _, tc := range []struct{ path, want string }{
		{"/history/drover-1/2/logs/executor/1", exec1},
		{"/history/drover-1/logs/executor/1", exec1},
		{"/history/drover-1/1/logs/executor/driver", "[drover: the driver (attempt 1) of application drover-1]\ndriver attempt 1\n" +
			"[drover: the driver (attempt 2) of application drover-1]\ndriver attempt 2\n"},
		{"/history/drover-1/logs/executor/driver?attempt=2", "driver attempt 2\n"},
		{"/history/drover-1/logs/executor/1?tail=1", "MARKER: the last line executor 1 wrote\n"},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body := new(bytes.Buffer)
		_, err = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || body.String() != tc.want {
			t.Errorf("GET %s: %s, %d bytes (%v), want 200 and %d bytes", tc.path, resp.Status, body.Len(), err, len(tc.want))
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", tc.path, ct)
		}
	}
	got := string(get(t, srv, "/history/drover-1/logs/executor/7", http.StatusNotFound))
	if want := "no log of executor 7 is kept in "; !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("GET an executor that kept nothing: %q, want %q… on one line", got, want)
	}
}

// TestKeptLogsHistoryReadsOnlyItsDirs: an event log names its
// application's kept-log directory, but the history server reads only the
// directories it was given: whoever can write event logs cannot point the
// server's credentials at another path.
func TestKeptLogsHistoryReadsOnlyItsDirs(t *testing.T) {
	for name, allow := range map[string][]string{"none given": {}, "another": {t.TempDir()}} {
		t.Run(name, func(t *testing.T) {
			srv, _ := keptHistoryReading(t, allow)
			resp, err := http.Get(srv.URL + "/history/drover-1/logs/executor/1")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "spark.driver.log.dfsDir") ||
				strings.Contains(string(body), "MARKER") {
				t.Errorf("%d %q: want a 404 that says which directories the server reads", resp.StatusCode, body)
			}
		})
	}
}
