package driver

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/metrics"
)

// TestUIRequiresTheToken: on a k8s:// master the driver's pages and REST
// API answer only requests with the application's token (none, a wrong
// one, a token where the driver made its own: refused), while /metrics
// answers Prometheus without it and shows no configuration; local masters
// and drover.ui.requireToken=false answer everyone, the latter with a
// warning.
func TestUIRequiresTheToken(t *testing.T) {
	const token = "the-right-token-0123456789abcdef"
	const canary, setting = "canary-ui-6f1d", "setting-canary-5e2c"
	type request struct {
		path, bearer string
		want         int
	}
	testCases := map[string]struct {
		master   string
		conf     []string
		requests []request
		wantLog  string
	}{
		"kubernetes": {
			master: "k8s://https://127.0.0.1:6443", conf: []string{"drover.ui.token=" + token},
			requests: []request{
				{path: "/jobs/", want: http.StatusUnauthorized},
				{path: "/", want: http.StatusUnauthorized},
				{path: "/environment/", bearer: "the-wrong-token-0123456789abcdef", want: http.StatusUnauthorized},
				{path: "/api/v1/applications", want: http.StatusUnauthorized},
				{path: "/api/v1/applications", bearer: token[:len(token)-1], want: http.StatusUnauthorized},
				{path: "/static/drover.css", want: http.StatusUnauthorized},
				{path: "/jobs/", bearer: token, want: http.StatusOK},
				{path: "/api/v1/applications", bearer: token, want: http.StatusOK},
				{path: metrics.Path, want: http.StatusOK},
				{path: metrics.SparkExecutorsPath, want: http.StatusOK},
			},
		},
		"kubernetes, a token the driver made": {
			master: "k8s://https://127.0.0.1:6443",
			requests: []request{
				{path: "/jobs/", want: http.StatusUnauthorized},
				{path: "/jobs/", bearer: token, want: http.StatusUnauthorized},
				{path: metrics.Path, want: http.StatusOK},
			},
		},
		"kubernetes, opened as Spark's": {
			master: "k8s://https://127.0.0.1:6443", conf: []string{"drover.ui.requireToken=false"},
			requests: []request{{path: "/jobs/", want: http.StatusOK}, {path: "/api/v1/applications", want: http.StatusOK}},
			wantLog:  "drover.ui.requireToken=false: the web UI and the REST API answer anyone",
		},
		"local-cluster": {
			master:   "local-cluster[1,1,256]",
			requests: []request{{path: "/jobs/", want: http.StatusOK}, {path: "/api/v1/applications", want: http.StatusOK}},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			conf := config.New().Set(config.Master.Key(), tc.master).Set(config.DriverHost.Key(), "127.0.0.1").
				Set(config.UIPort.Key(), "0").Set("spark.hadoop.fs.s3a.secret.key", canary).Set("spark.app.name", "ui-token-test").
				Set(config.UICustomExecutorLogURL.Key(), "http://logs.invalid/"+setting+"/{{EXECUTOR_ID}}")
			for _, kv := range tc.conf {
				k, v, _ := strings.Cut(kv, "=")
				conf.Set(k, v)
			}
			var logged strings.Builder
			log := slog.New(slog.NewTextHandler(&logged, nil))
			m, err := master.Parse(tc.master)
			if err != nil {
				t.Fatal(err)
			}
			w := startUI(conf, m, log)
			if w == nil {
				t.Fatal("the web UI did not start")
			}
			defer w.stop()
			dm := metrics.NewDriver(metrics.Options{AppID: "spark-ui-token", AppName: "ui-token-test"}, true)
			w.Handle(metrics.Path, metrics.Handler(dm.Registry))
			w.Handle(metrics.SparkExecutorsPath, metrics.Handler(dm.Registry))
			w.handle([]events.Event{&events.AppStart{AppID: "spark-ui-token", Name: "ui-token-test", Master: tc.master,
				DeployMode: "client", Conf: conf.Redacted()}})

			for _, r := range tc.requests {
				req, err := http.NewRequest(http.MethodGet, w.URL()+r.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if r.bearer != "" {
					req.Header.Set("Authorization", "Bearer "+r.bearer)
				}
				// No redirects: / leads to /jobs/, which must not decide.
				client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got := resp.StatusCode
				if got == http.StatusFound && r.path == "/" {
					got = http.StatusOK
				}
				if got != r.want {
					t.Errorf("GET %s (bearer %q) = %s, want %d", r.path, r.bearer, resp.Status, r.want)
				}
				if strings.Contains(string(body), canary) || strings.Contains(string(body), token) {
					t.Errorf("GET %s shows a secret:\n%s", r.path, body)
				}
				if got == http.StatusUnauthorized && strings.Contains(string(body), "spark-ui-token") {
					t.Errorf("GET %s refused, but names the application:\n%s", r.path, body)
				}
				if strings.HasPrefix(r.path, metrics.Path) && strings.Contains(string(body), setting) {
					t.Errorf("GET %s shows configuration:\n%s", r.path, body)
				}
			}
			if tc.wantLog != "" && !strings.Contains(logged.String(), tc.wantLog) {
				t.Errorf("the log does not say %q:\n%s", tc.wantLog, logged.String())
			}
			if strings.Contains(logged.String(), token) {
				t.Errorf("the log shows the token:\n%s", logged.String())
			}
		})
	}
}
