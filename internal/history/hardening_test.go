package history

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// An event log is written by whoever can write the directory: one whose
// application id would break out of a link is not served, and the links
// of the others carry their escaped prefix.
func TestHistoryEscapesAppIDs(t *testing.T) {
	const hostile = `"><img src=x onerror=alert(1)>`
	dir := t.TempDir()
	writeLog(t, dir, appEvents("app-ok", false, true), false)
	writeLog(t, dir, appEvents(hostile, false, true), false)
	s, err := New(Options{Dir: dir, Version: "test", Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	if diff := cmp.Diff([]string{"app-ok"}, ids(getJSON[[]appInfo](t, srv, "/api/v1/applications"))); diff != "" {
		t.Errorf("applications served (-want +got):\n%s", diff)
	}
	hostilePath := "/history/" + url.PathEscape(hostile) + "/jobs/"
	pages := map[string]int{
		"/": http.StatusOK, "/history/app-ok/jobs/": http.StatusOK, "/history/app-ok/stages/": http.StatusOK,
		hostilePath: http.StatusNotFound, "/api/v1/applications/" + url.PathEscape(hostile) + "/jobs": http.StatusNotFound,
	}
	for path, code := range pages {
		body := get(t, srv, path, code)
		if bytes.Contains(body, []byte("<img")) && code == http.StatusOK {
			t.Errorf("GET %s writes the hostile id raw:\n%s", path, body)
		}
	}
	// Every link of an application's page stays under its prefix.
	jobs := get(t, srv, "/history/app-ok/jobs/", http.StatusOK)
	links := regexp.MustCompile(`href="(/[^"]*)"`).FindAllSubmatch(jobs, -1)
	if len(links) == 0 {
		t.Fatal("the jobs page has no links")
	}
	for _, l := range links {
		if p := string(l[1]); !regexp.MustCompile(`^/history/app-ok/`).MatchString(p) {
			t.Errorf("link %s leaves the application's prefix", p)
		}
	}
}

// A request for an unknown application scans the directory again (its log
// may just have been written), but at most once per forcedRescanInterval:
// each scan can be an S3 LIST, and anyone can name ids.
func TestForcedRescansAreSpaced(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, appEvents("app-1", false, true), false)
	clk := clocktesting.NewFakeClock(t0)
	s, err := New(Options{Dir: dir, Version: "test", Clock: clk, UpdateInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	get(t, srv, "/history/app-none/jobs/", http.StatusNotFound) // forces a scan
	writeLog(t, dir, appEvents("app-2", false, true), false)
	get(t, srv, "/history/app-2/jobs/", http.StatusNotFound) // within the interval: no scan
	get(t, srv, "/history/"+url.PathEscape("bad id!")+"/jobs/", http.StatusNotFound)
	clk.Step(forcedRescanInterval)
	get(t, srv, "/history/app-2/jobs/", http.StatusOK)
	if n := s.Apps(); n != 2 {
		t.Errorf("%d applications, want 2", n)
	}
}
