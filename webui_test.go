//go:build integration

package drover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/testenv/browser"
)

// waitForFile is a task that runs until its input file exists, so a test
// can look at a job while it runs.
var waitForFile = Register("test.waitForFile", func(tc *TaskContext, path string) (int, error) {
	deadline := time.After(3 * time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return tc.Partition(), nil
		}
		select {
		case <-tc.Done():
			return 0, tc.Err()
		case <-deadline:
			return 0, errors.New("waitForFile: nobody released the task")
		case <-time.After(20 * time.Millisecond):
		}
	}
})

// TestWebUIInABrowser drives the UI of a running local-cluster job with a
// headless Chromium: every page while a job's tasks are blocked, the nav
// links, a stage's detail, then the pages after the job ends.
func TestWebUIInABrowser(t *testing.T) {
	p := browser.New(t)
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
			waitForRunningTasks(t, url, "", dc.AppID(), 2)

			p.Open(url)
			if loc := p.Location(); !strings.HasSuffix(loc, "/jobs/") {
				t.Errorf("the UI's root led to %q, want /jobs/", loc)
			}
			if _, ok := p.Attr(`meta[http-equiv="refresh"]`, "content"); !ok {
				t.Error("the jobs page of a running application does not reload itself")
			}
			p.Expect("jobs", "Active Jobs (1)", "Completed Jobs (1)", "Failed Jobs (1)", "0/4", "3/3", "0/1 (1 failed)",
				"panic: bad record: bad")
			p.Screenshot("jobs")
			if strings.Contains(p.Text("#failed-jobs + table"), "goroutine") {
				t.Error("a failure's stack shows before it is unfolded")
			}
			p.Do("unfolding a failure", chromedp.Click(chromedp.CSS(`#failed-jobs + table details summary`)))
			if !strings.Contains(p.Text("#failed-jobs + table"), "goroutine") {
				t.Error("an unfolded failure does not show the task's stack")
			}
			p.Screenshot("jobs-failure")

			p.Follow("Stages", "/stages/")
			p.Expect("stages", "Active Stages (1)", "Completed Stages (1)", "Failed Stages (1)", "RunPartitions test.waitForFile")
			p.Screenshot("stages")
			p.Do("opening the active stage", chromedp.Click(chromedp.CSS(`#active-stages + table a`)), chromedp.WaitVisible(chromedp.CSS("#tasks")))
			p.Expect("stage", "Status: Active", "0/4 done, 2 running", "No task has succeeded yet.", "Tasks (2 of 2 remembered")
			p.Screenshot("stage-running")

			p.Follow("Executors", "/executors/")
			p.Expect("executors", "driver", "Active\t3", "127.0.0.1:")
			for _, id := range []string{"1", "2"} {
				href, _ := p.Attr(`a[href$="/exec-`+id+`"]`, "href")
				if want := "http://logs.invalid/" + dc.AppID() + "/exec-" + id; href != want {
					t.Errorf("executor %s's log link = %q, want %q", id, href, want)
				}
			}
			p.Screenshot("executors")

			p.Follow("Allocation", "/allocation/")
			p.Expect("allocation", "No allocation rounds: under local-cluster[2,1,256]")
			p.Screenshot("allocation")

			p.Follow("Environment", "/environment/")
			p.Expect("environment", "spark.hadoop.fs.s3a.secret.key", "*********(redacted)", "spark.ui.custom.executor.log.url")
			if strings.Contains(p.Text("main"), "hunter2") {
				t.Error("the environment page shows a secret")
			}
			p.Screenshot("environment")

			// The job ends: the pages say so once the store has the events.
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				return err
			}
			wg.Wait()
			if blockedErr != nil {
				return blockedErr
			}
			p.Follow("Jobs", "/jobs/")
			pollUntil(15*time.Second, 200*time.Millisecond, func() bool {
				if strings.Contains(p.Text("main"), "Completed Jobs (2)") {
					return true
				}
				p.Do("reloading", chromedp.Reload())
				return false
			})
			p.Expect("jobs after the end", "Active Jobs (0)", "Completed Jobs (2)", "4/4")
			p.Screenshot("jobs-done")
			p.Follow("Stages", "/stages/")
			p.Do("opening the finished stage", chromedp.Click(chromedp.CSS(`#completed-stages + table a`)), chromedp.WaitVisible(chromedp.CSS("#tasks")))
			p.Expect("finished stage", "Summary Metrics for 4 Completed Tasks", "Duration", "Median", "4/4 done")
			p.Screenshot("stage-done")
			return nil
		})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	if t.Failed() {
		t.Logf("driver stderr:\n%s", stderr.String())
	}
}

// uiGet is a GET of url with the UI's token, when there is one.
func uiGet(url, token string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return http.DefaultClient.Do(req)
}

// waitForRunningTasks polls the REST API (with the UI's token, when there
// is one) until the running job has n active tasks.
func waitForRunningTasks(t *testing.T, url, token, appID string, n int) {
	t.Helper()
	var jobs []struct{ NumActiveTasks int }
	var err error
	if !pollUntil(time.Minute, 50*time.Millisecond, func() bool {
		jobs = nil
		var resp *http.Response
		resp, err = uiGet(url+"/api/v1/applications/"+appID+"/jobs?status=running", token)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&jobs)
			resp.Body.Close()
		}
		return err == nil && len(jobs) == 1 && jobs[0].NumActiveTasks == n
	}) {
		t.Fatalf("the running job never had %d active tasks: %v, %+v", n, err, jobs)
	}
}

// waitForPage polls url (with the UI's token, when there is one) until
// its body has want.
func waitForPage(t *testing.T, url, token, want string) {
	t.Helper()
	var body []byte
	if pollUntil(time.Minute, 100*time.Millisecond, func() bool {
		resp, err := uiGet(url, token)
		if err != nil {
			return false
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return bytes.Contains(body, []byte(want))
	}) {
		return
	}
	t.Fatalf("%s never showed %q; last:\n%s", url, want, body)
}

// TestWebUIOfAKubernetesJobInABrowser drives the UI of a client-mode job
// on a real control plane whose executor pods run on a process node, with
// dynamic allocation asking for more executors than a ResourceQuota
// admits: the Executors page shows pods and nodes, the Allocation page the
// allocator's rounds and why it waits.
func TestWebUIOfAKubernetesJobInABrowser(t *testing.T) {
	p := browser.New(t)
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}},
	}
	if _, err := env.Client.CoreV1().ResourceQuotas(ns).Create(t.Context(), quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(t.TempDir(), "release")
	var stderr bytes.Buffer
	// On Kubernetes the UI asks for the application's token; a client-mode
	// driver off a terminal shows its own to nobody, so the test sets it.
	const token = "webui-test-token-0123456789abcdef"
	code := runDriver(append(k8sArgs(env, ns, "spark.executor.memory=256m", "spark.ui.port=0", "drover.scheduler.prefetch=0",
		"drover.ui.token="+token,
		"spark.dynamicAllocation.enabled=true", "spark.dynamicAllocation.minExecutors=1", "spark.dynamicAllocation.maxExecutors=3",
		"spark.dynamicAllocation.schedulerBacklogTimeout=200ms",
		"spark.ui.custom.executor.log.url=http://logs.invalid/{{KUBERNETES_NAMESPACE}}/{{POD_NAME}}"), "--name", "wordcount"), &stderr,
		func(dc *Context) error {
			url := dc.UIWebURL()
			var wg sync.WaitGroup
			var jobErr error
			wg.Go(func() {
				_, jobErr = RunPartitions(dc, waitForFile, []string{release, release, release, release, release, release})
			})
			defer func() { os.WriteFile(release, nil, 0o644); wg.Wait() }()
			if resp, err := http.Get(url + "/jobs/"); err != nil || resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("the UI without the token: %v, %v; want 401", resp, err)
			} else {
				resp.Body.Close()
			}
			waitForRunningTasks(t, url, token, dc.AppID(), 2)
			waitForPage(t, url+"/allocation/", token, "The allocator waits:")

			p.Open(dc.d.UILoginLink()) // the cookie admits the browser from now on
			p.Open(url + "/executors/")
			p.Expect("executors", "procnode-0", "(pod Running)", "wordcount-")
			if _, ok := p.Attr(`#executors a[href^="http://logs.invalid/`+ns+`/wordcount-"]`, "href"); !ok {
				t.Error("no executor log link with the namespace and pod name")
			}
			p.Screenshot("executors")
			p.Follow("Allocation", "/allocation/")
			p.Expect("allocation", "Executor pods", "The allocator waits: 1 held back by ResourceQuota pods", "Latest rounds",
				"Dynamic allocation", "Target: 3 executors")
			p.Screenshot("allocation")
			p.Follow("Jobs", "/jobs/")
			p.Expect("jobs", "Active Jobs (1)", "0/6")
			p.Screenshot("jobs")

			if err := os.WriteFile(release, nil, 0o644); err != nil {
				return err
			}
			wg.Wait()
			return jobErr
		})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	if t.Failed() {
		t.Logf("driver stderr:\n%s", stderr.String())
	}
}
