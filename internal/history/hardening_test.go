package history

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/events"
)

// logBuffer is a log that requests write to while the test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

const hostileID = `"><img src=x onerror=alert(1)>`

// An event log is written by whoever can write the directory: one whose
// application id would break out of a link or path is not served, and says
// so in the log; the links of the others stay under their prefix and lead
// somewhere.
func TestHistoryEscapesAppIDs(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, appEvents("app-ok", false, true), false)
	writeLog(t, dir, appEvents(hostileID, false, true), false)
	writeLog(t, dir, appEvents("..", false, true), false)
	// A log without its AppStart is known by its file's name.
	line, err := events.Marshal(&events.JobStart{Header: at(0), JobID: 1, Name: "count"})
	if err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(dir, "x"+hostileID)
	if err := os.WriteFile(named, append(line, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	s, err := New(Options{Dir: dir, Version: "test", Clock: clocktesting.NewFakeClock(t0), Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	if diff := cmp.Diff([]string{"app-ok"}, ids(getJSON[[]appInfo](t, srv, "/api/v1/applications"))); diff != "" {
		t.Errorf("applications served (-want +got):\n%s", diff)
	}
	refused := regexp.MustCompile(`(?m)^.*level=WARN msg="history: an event log is not served" path=.*application id .*$`).FindAllString(logs.String(), -1)
	if len(refused) != 3 || !strings.Contains(strings.Join(refused, "\n"), "path="+fmt.Sprintf("%q", named)) {
		t.Errorf("the logs not served are not each logged as such:\n%s", logs.String())
	}

	escaped := url.PathEscape(hostileID)
	for path, code := range map[string]int{
		"/":                                         http.StatusOK,
		"/history/app-ok/jobs/":                     http.StatusOK,
		"/history/app-ok/stages/":                   http.StatusOK,
		"/history/" + escaped:                       http.StatusFound,
		"/history/" + escaped + "/jobs/":            http.StatusNotFound,
		"/history/x" + escaped + "/jobs/":           http.StatusNotFound,
		"/api/v1/applications/" + escaped:           http.StatusNotFound,
		"/api/v1/applications/" + escaped + "/jobs": http.StatusNotFound,
	} {
		if body := get(t, srv, path, code); bytes.Contains(body, []byte("<img")) {
			t.Errorf("GET %s writes the hostile id raw:\n%s", path, body)
		}
	}

	// Every link of an application's page stays under its prefix and
	// answers.
	jobs := get(t, srv, "/history/app-ok/jobs/", http.StatusOK)
	links := regexp.MustCompile(`(?:href|src)="(/[^"]*)"`).FindAllSubmatch(jobs, -1)
	if len(links) == 0 {
		t.Fatal("the jobs page has no links")
	}
	for _, l := range links {
		p := strings.ReplaceAll(string(l[1]), "&amp;", "&")
		if !strings.HasPrefix(p, "/history/app-ok/") {
			t.Errorf("link %s leaves the application's prefix", p)
			continue
		}
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("link %s: %s", p, resp.Status)
		}
	}
}

// A request for an unknown application scans the directory again (its log
// may just have been written), but not within forcedRescanInterval of the
// last scan: each scan can be an S3 LIST, and anyone can name ids. A burst
// of requests, or a directory that cannot be read, makes one LIST per
// interval, not one per request.
func TestForcedRescansAreSpaced(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, appEvents("app-1", false, true), false)
	clk := clocktesting.NewFakeClock(t0)
	var logs logBuffer
	s, err := New(Options{Dir: dir, Version: "test", Clock: clk, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	// listed is how many times the directory was listed, or tried.
	listed := func() int {
		return strings.Count(logs.String(), `msg="history: listed the event log directory"`) +
			strings.Count(logs.String(), `msg="history: reading the event log directory"`)
	}

	type step struct {
		name    string
		advance time.Duration // the clock, first
		write   string        // an application whose log is written, next
		path    string
		code    int
		lists   int // that the request makes
	}
	steps := []step{
		{name: "unknown id just after a scan", path: "/history/app-none/jobs/", code: http.StatusNotFound},
		{name: "a log written since, within the interval", advance: 4 * time.Second, write: "app-2",
			path: "/history/app-2/jobs/", code: http.StatusNotFound},
		{name: "an id no log can have", advance: time.Second, path: "/history/" + url.PathEscape(hostileID) + "/jobs/",
			code: http.StatusNotFound},
		{name: "forcedRescanInterval after the last scan", path: "/history/app-2/jobs/", code: http.StatusOK, lists: 1},
		{name: "unknown id again, within the interval", advance: 4 * time.Second, path: "/api/v1/applications/app-none",
			code: http.StatusNotFound},
		{name: "update interval passed, unknown id: one LIST, not two", advance: 6 * time.Second,
			path: "/history/app-none/jobs/", code: http.StatusNotFound, lists: 1},
		{name: "the list, within the update interval", path: "/api/v1/applications", code: http.StatusOK},
	}
	for _, st := range steps {
		clk.Step(st.advance)
		if st.write != "" {
			writeLog(t, dir, appEvents(st.write, false, true), false)
		}
		before := listed()
		get(t, srv, st.path, st.code)
		if got := listed() - before; got != st.lists {
			t.Errorf("%s: GET %s listed the directory %d times, want %d", st.name, st.path, got, st.lists)
		}
	}

	burst := func(name string) {
		t.Helper()
		clk.Step(DefaultUpdateInterval)
		before := listed()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				resp, err := http.Get(srv.URL + "/api/v1/applications/app-none")
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		wg.Wait()
		if got := listed() - before; got != 1 {
			t.Errorf("%s: 8 requests listed the directory %d times, want 1", name, got)
		}
	}
	burst("a burst of requests")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	burst("a burst of requests, the directory gone")
	if n := s.Apps(); n != 2 {
		t.Errorf("%d applications, want the 2 last listed", n)
	}
}
