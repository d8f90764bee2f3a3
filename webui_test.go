package drover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// waitForFile is a task that runs until its input file exists, so a test
// can look at a job while it runs.
var waitForFile = Register("test.waitForFile", func(_ *TaskContext, path string) (int, error) {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return 1, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, errors.New("waitForFile: nobody released the task")
})

// chromium finds a headless-capable Chromium: $DROVER_CHROMIUM, else
// Debian's chromium on the PATH. Without one the test skips, except under
// CI=true, where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DROVER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium for the browser test: apt-get install chromium (or hack/install-test-packages.sh), or set DROVER_CHROMIUM"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// artifactDir is where a test leaves files for people to look at:
// $DROVER_ARTIFACTS/<test name> when set, else the test's temporary
// directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if root := os.Getenv("DROVER_ARTIFACTS"); root != "" {
		dir = filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// browser starts a headless Chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.WindowSize(1400, 1000),
		chromedp.NoSandbox) // tests run as root in CI, where Chromium's sandbox refuses to start
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first action starts the browser; it lives as long as ctx.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// page is one visit: the text of <main>, with a screenshot saved as
// name.png.
type page struct {
	t    *testing.T
	ctx  context.Context
	dir  string
	shot int
}

// text is the visible text of sel on the current page.
func (p *page) text(sel string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// do runs browser actions with a time limit.
func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// screenshot saves the whole page as name.png in the artifact directory.
func (p *page) screenshot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	p.shot++
	if err := os.WriteFile(filepath.Join(p.dir, fmt.Sprintf("%02d-%s.png", p.shot, name)), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// expect checks that the text of <main> has every one of want.
func (p *page) expect(where string, want ...string) {
	p.t.Helper()
	text := p.text("main")
	for _, w := range want {
		if !strings.Contains(text, w) {
			p.t.Errorf("%s: missing %q in the page's text:\n%s", where, w, text)
		}
	}
}

// follow clicks the nav bar's link to path and checks where it led.
func (p *page) follow(link, path string) {
	p.t.Helper()
	p.do("following "+link, chromedp.Click(chromedp.CSS(`nav a[href="`+path+`"]`)), chromedp.WaitVisible(chromedp.CSS("main h1")))
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasSuffix(loc, path) {
		p.t.Fatalf("the %s link led to %q (%v), want …%s", link, loc, err, path)
	}
	if cls, _ := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`nav a[href="`+path+`"]`), "class")); cls.Value != "active" {
		p.t.Errorf("the %s link is not highlighted on its page", link)
	}
}

// TestWebUIInABrowser drives the UI of a running local-cluster job with a
// headless Chromium: every page while a job's tasks are blocked, the nav
// links, a stage's detail, then the pages after the job ends.
func TestWebUIInABrowser(t *testing.T) {
	ctx := browser(t)
	dir := artifactDir(t)
	t.Logf("screenshots in %s", dir)
	release := filepath.Join(t.TempDir(), "release")
	var stderr bytes.Buffer
	code := runDriver([]string{"--master", "local-cluster[2,1,256]", "--name", "ui-test",
		"--conf", "drover.log.level=warn", "--conf", "spark.task.maxFailures=1", "--conf", "drover.scheduler.prefetch=0",
		"--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.port=0",
		"--conf", "spark.ui.custom.executor.log.url=http://logs.invalid/{{APP_ID}}/exec-{{EXECUTOR_ID}}",
		"--conf", "spark.hadoop.fs.s3a.secret.key=hunter2"}, &stderr,
		func(dc *Context) error {
			url := dc.UIWebURL()
			if !strings.HasPrefix(url, "http://127.0.0.1:") {
				return fmt.Errorf("UIWebURL = %q, want http://127.0.0.1:<port>", url)
			}
			if _, err := RunPartitions(dc, square, []int{1, 2, 3}); err != nil {
				return err
			}
			if _, err := RunPartitions(dc, fails, []string{"bad"}); err == nil {
				return errors.New("the failing job succeeded")
			}
			var wg sync.WaitGroup
			var blockedErr error
			wg.Go(func() { _, blockedErr = RunPartitions(dc, waitForFile, []string{release, release, release, release}) })
			defer func() { os.WriteFile(release, nil, 0o644); wg.Wait() }()
			waitForRunningTasks(t, url, dc.AppID(), 2)

			p := &page{t: t, ctx: ctx, dir: dir}
			p.do("opening the UI", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("main h1")))
			if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasSuffix(loc, "/jobs/") {
				t.Errorf("the UI's root led to %q, want /jobs/", loc)
			}
			if r, _ := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`meta[http-equiv="refresh"]`), "content")); !r.Exists {
				t.Error("the jobs page of a running application does not reload itself")
			}
			p.expect("jobs", "Active Jobs (1)", "Completed Jobs (1)", "Failed Jobs (1)", "0/4", "3/3", "0/1 (1 failed)",
				"panic: bad record: bad")
			p.screenshot("jobs")

			p.follow("Stages", "/stages/")
			p.expect("stages", "Active Stages (1)", "Completed Stages (1)", "Failed Stages (1)", "RunPartitions test.waitForFile")
			p.screenshot("stages")
			p.do("opening the active stage", chromedp.Click(chromedp.CSS(`#active-stages + table a`)), chromedp.WaitVisible(chromedp.CSS("#tasks")))
			p.expect("stage", "Status: Active", "0/4 done, 2 running", "No task has succeeded yet.", "Tasks (2 of 2 remembered")
			p.screenshot("stage-running")

			p.follow("Executors", "/executors/")
			p.expect("executors", "driver", "Active\t3", "127.0.0.1:")
			for _, id := range []string{"1", "2"} {
				href, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`a[href$="/exec-`+id+`"]`), "href"))
				if want := "http://logs.invalid/" + dc.AppID() + "/exec-" + id; err != nil || href.Value != want {
					t.Errorf("executor %s's log link = %q (%v), want %q", id, href.Value, err, want)
				}
			}
			p.screenshot("executors")

			p.follow("Allocation", "/allocation/")
			p.expect("allocation", "No allocation rounds: under local-cluster[2,1,256]")
			p.screenshot("allocation")

			p.follow("Environment", "/environment/")
			p.expect("environment", "spark.hadoop.fs.s3a.secret.key", "*********(redacted)", "spark.ui.custom.executor.log.url")
			if strings.Contains(p.text("main"), "hunter2") {
				t.Error("the environment page shows a secret")
			}
			p.screenshot("environment")

			// The job ends: the pages say so once the store has the events.
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				return err
			}
			wg.Wait()
			if blockedErr != nil {
				return blockedErr
			}
			p.follow("Jobs", "/jobs/")
			deadline := time.Now().Add(15 * time.Second)
			for !strings.Contains(p.text("main"), "Completed Jobs (2)") && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				p.do("reloading", chromedp.Reload())
			}
			p.expect("jobs after the end", "Active Jobs (0)", "Completed Jobs (2)", "4/4")
			p.screenshot("jobs-done")
			p.follow("Stages", "/stages/")
			p.do("opening the finished stage", chromedp.Click(chromedp.CSS(`#completed-stages + table a`)), chromedp.WaitVisible(chromedp.CSS("#tasks")))
			p.expect("finished stage", "Summary Metrics for 4 Completed Tasks", "Duration", "Median", "4/4 done")
			p.screenshot("stage-done")
			return nil
		})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	if t.Failed() {
		t.Logf("driver stderr:\n%s", stderr.String())
	}
}

// waitForRunningTasks polls the REST API until the running job has n
// active tasks.
func waitForRunningTasks(t *testing.T, url, appID string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var jobs []struct{ NumActiveTasks int }
		resp, err := http.Get(url + "/api/v1/applications/" + appID + "/jobs?status=running")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&jobs)
			resp.Body.Close()
		}
		if err == nil && len(jobs) == 1 && jobs[0].NumActiveTasks == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running job never had %d active tasks: %v, %+v", n, err, jobs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
