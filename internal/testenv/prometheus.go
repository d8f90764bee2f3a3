package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ErrMissingPrometheus is wrapped by StartPrometheus's error when the
// prometheus binary is not installed.
var ErrMissingPrometheus = errors.New("prometheus (the monitoring server) missing")

// Prometheus is a running Prometheus server on loopback that scrapes its
// targets every second. Stop it with Stop.
type Prometheus struct {
	// URL is http://127.0.0.1:<port>, the server's web and HTTP API.
	URL string
	// Dir holds the configuration, the TSDB and the server's log.
	Dir string

	comp *component
	once sync.Once
	err  error
}

// PrometheusBinary finds prometheus on $PATH. It fails when it is missing,
// saying how to install it.
func PrometheusBinary() (string, error) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return "", fmt.Errorf("%w: install Debian's package (sudo apt-get install prometheus) or put a prometheus binary on $PATH: %w",
			ErrMissingPrometheus, err)
	}
	return bin, nil
}

// NewPrometheus starts a Prometheus server for one test that scrapes
// targets (host:port, path /metrics) every second, and stops it when the
// test ends. When prometheus is missing, the test is skipped, except under
// CI=true, where it fails; a prometheus that does not start fails it.
func NewPrometheus(t testing.TB, targets ...string) *Prometheus {
	t.Helper()
	p, err := StartPrometheus(context.Background(), t.TempDir(), targets)
	if errors.Is(err, ErrMissingPrometheus) {
		unavailable(t, "Prometheus server", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stopping the Prometheus server: %v", err)
		}
	})
	return p
}

// StartPrometheus starts prometheus on a free loopback port, its data in a
// new directory under parent (os.TempDir() when empty), scraping targets
// every second, and returns once it is ready. On failure nothing is left
// running.
func StartPrometheus(ctx context.Context, parent string, targets []string) (*Prometheus, error) {
	bin, err := PrometheusBinary()
	if err != nil {
		return nil, err
	}
	if parent == "" {
		parent = os.TempDir()
	}
	for attempt := 1; ; attempt++ {
		p, err := startPrometheus(ctx, bin, parent, targets)
		if err == nil || attempt == 3 || ctx.Err() != nil || !strings.Contains(err.Error(), "address already in use") {
			return p, err
		}
	}
}

func startPrometheus(ctx context.Context, bin, parent string, targets []string) (_ *Prometheus, err error) {
	dir, err := os.MkdirTemp(parent, "drover-prometheus-")
	if err != nil {
		return nil, fmt.Errorf("creating the Prometheus server's directory: %w", err)
	}
	p := &Prometheus{Dir: dir}
	defer func() {
		if err != nil {
			_ = p.Stop()
		}
	}()
	quoted := make([]string, len(targets))
	for i, t := range targets {
		quoted[i] = strconv.Quote(t)
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: drover
    static_configs:
      - targets: [%s]
`, strings.Join(quoted, ", "))
	confPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("writing the Prometheus configuration: %w", err)
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	p.URL = "http://" + addr
	p.comp, err = startComponent(dir, "prometheus", bin, []string{
		"--config.file=" + confPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
	}, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	if err := waitReady(ctx, p.comp, func(ctx context.Context) error {
		return httpOK(ctx, hc, p.URL+"/-/ready", "", "")
	}); err != nil {
		return nil, err
	}
	return p, nil
}

// Sample is one series of a query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query evaluates an instant PromQL query whose result is a vector.
func (p *Prometheus) Query(ctx context.Context, promql string) ([]Sample, error) {
	var res struct {
		Status, Error string
		Data          struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := p.get(ctx, "/api/v1/query?query="+url.QueryEscape(promql), &res); err != nil {
		return nil, fmt.Errorf("query %s: %w", promql, err)
	}
	if res.Status != "success" || res.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: status %q, result type %q: %s", promql, res.Status, res.Data.ResultType, res.Error)
	}
	out := make([]Sample, 0, len(res.Data.Result))
	for _, r := range res.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %v: %w", promql, r.Value[1], err)
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}

// Targets says how each scrape target fares: its URL, health and last
// error, for a test's failure message.
func (p *Prometheus) Targets(ctx context.Context) (string, error) {
	var res struct {
		Data struct {
			ActiveTargets []struct {
				ScrapeURL, Health, LastError string
			}
		}
	}
	if err := p.get(ctx, "/api/v1/targets", &res); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, t := range res.Data.ActiveTargets {
		fmt.Fprintf(&b, "%s: %s %s\n", t.ScrapeURL, t.Health, t.LastError)
	}
	return b.String(), nil
}

func (p *Prometheus) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	// The API answers errors with JSON too (400 for a bad query).
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Stop stops the server and removes its directory.
func (p *Prometheus) Stop() error {
	p.once.Do(func() {
		if p.comp != nil {
			p.comp.stop(5 * time.Second)
		}
		if err := os.RemoveAll(p.Dir); err != nil {
			p.err = fmt.Errorf("removing %s: %w", p.Dir, err)
		}
	})
	return p.err
}
