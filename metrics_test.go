//go:build integration

package drover

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/drover-project/drover/internal/metrics"
	"github.com/drover-project/drover/internal/testenv"
)

// TestPrometheusScrapesTheDriver runs a local-cluster job that holds its
// three executors busy while a real Prometheus server scrapes the driver's
// /metrics every second, and asks Prometheus, in PromQL, how many executors
// are registered and busy; then lets the job finish and finds its tasks
// counted.
func TestPrometheusScrapesTheDriver(t *testing.T) {
	if _, err := testenv.PrometheusBinary(); err != nil {
		if testenv.InCI() {
			t.Fatalf("CI=true: failing instead of skipping: %v", err)
		}
		t.Skipf("skipping (set CI=true to fail instead): %v", err)
	}
	const executors = 3
	release := filepath.Join(t.TempDir(), "release")
	var stderr bytes.Buffer
	code := runDriver([]string{"--master", fmt.Sprintf("local-cluster[%d,1,256]", executors), "--name", "scraped",
		"--conf", "spark.ui.port=0", "--conf", "drover.log.level=warn", "--conf", "spark.ui.showConsoleProgress=false"}, &stderr,
		func(c *Context) (err error) {
			u, err := url.Parse(c.UIWebURL())
			if c.UIWebURL() == "" || err != nil {
				return fmt.Errorf("the driver serves no metrics (UI URL %q)", c.UIWebURL())
			}
			port := u.Port()
			target := net.JoinHostPort("127.0.0.1", port)
			job := make(chan error, 1)
			go func() {
				_, err := RunPartitions(c, waitForFile, []string{release, release, release})
				job <- err
			}()
			// The job ends however the test does.
			finished := false
			finish := func() error {
				if finished {
					return nil
				}
				finished = true
				if err := os.WriteFile(release, nil, 0o644); err != nil {
					return err
				}
				return <-job
			}
			defer func() {
				if ferr := finish(); err == nil {
					err = ferr
				}
			}()
			ctx, cancel := context.WithTimeout(c, 2*time.Minute)
			defer cancel()
			p, err := testenv.StartPrometheus(ctx, t.TempDir(), []string{target})
			if err != nil {
				return err
			}
			defer p.Stop()
			app := `{application_id="` + c.AppID() + `",application_name="scraped"}`
			for query, want := range map[string]float64{
				"drover_executors_registered":                       executors,
				"count(metrics_executor_totalCores" + app + ")":     executors,
				"sum(metrics_executor_activeTasks" + app + ")":      executors,
				`spark_info{version!=""}`:                           1,
				`drover_scheduler_running_tasks{job="drover"}`:      executors,
				`drover_events_dropped_total{consumer="status"}`:    0,
				`drover_executor_pods_created_total{result="ok"}`:   0, // no pods on local-cluster
				`drover_tasks_finished_total{state="success"}`:      0,
				`drover_scheduler_pending_tasks{job="drover"}`:      0,
				`drover_jobs_active{instance="` + target + `"}`:     1,
				`count(metrics_executor_maxTasks{executor_id!=""})`: executors,
			} {
				if err := waitForValue(ctx, p, query, want); err != nil {
					return err
				}
			}
			if err := finish(); err != nil {
				return err
			}
			for query, want := range map[string]float64{
				"sum(metrics_executor_completedTasks_total" + app + ")": executors,
				`drover_tasks_finished_total{state="success"}`:          executors,
				"sum(metrics_executor_activeTasks" + app + ")":          0,
				`drover_jobs_finished_total{result="succeeded"}`:        1,
			} {
				if err := waitForValue(ctx, p, query, want); err != nil {
					return err
				}
			}
			// Spark's path serves the same.
			body, err := get(ctx, "http://"+target+metrics.SparkExecutorsPath)
			if err != nil {
				return err
			}
			if want := "metrics_executor_completedTasks_total" + strings.TrimSuffix(app, "}") + `,executor_id="`; !strings.Contains(body, want) {
				return fmt.Errorf("%s lacks the executors' completed tasks:\n%s", metrics.SparkExecutorsPath, body)
			}
			return nil
		})
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
}

// waitForValue polls Prometheus until query gives one series of value want,
// and says what it last saw and how the scrapes fare when it gives up.
func waitForValue(ctx context.Context, p *testenv.Prometheus, query string, want float64) error {
	var got []testenv.Sample
	var err error
	for {
		if got, err = p.Query(ctx, query); err == nil && len(got) == 1 && got[0].Value == want {
			return nil
		}
		select {
		case <-ctx.Done():
			targets, _ := p.Targets(context.Background())
			return fmt.Errorf("PromQL %s = %v (%v), want one series of %s; scrape targets:\n%s",
				query, got, err, strconv.FormatFloat(want, 'g', -1, 64), targets)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// TestMetricsOnKubernetes runs dynamic allocation on the test control
// plane and reads the driver's registry once the executors are gone: the
// pods it created and deleted, their executors' registration times and
// removals, the allocation rounds and the API requests that made them.
func TestMetricsOnKubernetes(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	var stderr bytes.Buffer
	args := k8sArgs(env, ns, append([]string{"spark.executor.memory=256m", "spark.ui.port=0"}, dynamicAllocationConf...)...)
	job := dynamicAllocationJob(t)
	code := runDriver(args, &stderr, func(c *Context) error {
		if err := job(c); err != nil {
			return err
		}
		// The last pods' deletions and the events are still on their way
		// when the executors are gone from the backend.
		var families []*dto.MetricFamily
		v := func(name string, labels ...string) float64 { return familyValue(families, name, labels...) }
		var gatherErr error
		pollUntil(20*time.Second, 100*time.Millisecond, func() bool {
			if families, gatherErr = c.Metrics().Gather(); gatherErr != nil {
				return true
			}
			// The removals reach the metrics through the event stream,
			// the pods' deletions directly: both must have arrived.
			return v("drover_executors_registered") == 0 &&
				v("drover_executor_pods_deleted_total", "reason", "killed") >= v("drover_executors_removed_total", "cause", "killed")
		})
		if gatherErr != nil {
			return gatherErr
		}
		created, registered := v("drover_executor_pods_created_total", "result", "ok"), v("drover_executor_registration_seconds")
		t.Logf("%v pods created, %v executors registered in %.2f s on average, %v removed as idle; %v API requests",
			created, registered, v("drover_executor_registration_seconds_sum")/max(registered, 1),
			v("drover_executors_removed_total", "cause", "killed"), v("drover_kubernetes_api_requests_total"))
		// Each job scaled up to at least two executors, idle ones left.
		if registered < 4 || created < registered {
			t.Errorf("%v pods created, %v executors registered (timed from their pods' creation); want ≥ 4 registered, no more than created",
				created, registered)
		}
		if d := v("drover_executor_registration_seconds_sum"); d <= 0 || d > 60*registered {
			t.Errorf("registration took %v s in all for %v executors", d, registered)
		}
		killed := v("drover_executors_removed_total", "cause", "killed")
		if killed < 4 || v("drover_executor_pods_deleted_total", "reason", "killed", "result", "ok") < killed {
			t.Errorf("%v executors removed as idle, %v of their pods deleted; want ≥ 4, all deleted", killed,
				v("drover_executor_pods_deleted_total", "reason", "killed", "result", "ok"))
		}
		if n := v("drover_kubernetes_api_requests_total", "method", "POST", "code", "201"); n < created {
			t.Errorf("%v POST requests answered 201 for %v pods created", n, created)
		}
		if n := v("drover_allocation_round_duration_seconds"); n < 1 {
			t.Errorf("%v allocation rounds observed", n)
		}
		for name, want := range map[string]float64{"drover_executors_registered": 0, "drover_dynalloc_target_executors": 0,
			"metrics_executor_totalCores": 0, "drover_jobs_active": 0} {
			if got := v(name); got != want {
				t.Errorf("%s = %v after the jobs, want %v", name, got, want)
			}
		}
		return nil
	})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
}

// familyValue sums the series of the family name whose labels include the
// name-value pairs of labels; for a histogram (name, or name_sum) it sums
// the sample counts (sums).
func familyValue(families []*dto.MetricFamily, name string, labels ...string) float64 {
	base, wantSum := strings.CutSuffix(name, "_sum")
	total := 0.0
	for _, f := range families {
		if f.GetName() != name && !(wantSum && f.GetName() == base) {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			case m.Histogram != nil && wantSum:
				total += m.GetHistogram().GetSampleSum()
			case m.Histogram != nil:
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}
