package k8sconf

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/allocator"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

const appID = "drover-0123456789abcdef"

func load(t *testing.T, pairs ...string) *config.Conf {
	t.Helper()
	conf, _, err := config.Load(config.Sources{Env: func(string) string { return "" }, Pairs: append([]string{
		"spark.kubernetes.namespace=spark", "spark.kubernetes.container.image=app:1",
		"drover.kubernetes.executor.binary=/app",
	}, pairs...)})
	if err != nil {
		t.Fatal(err)
	}
	return conf
}

// TestLoad: the options are the configuration's, read once.
func TestLoad(t *testing.T) {
	type summary struct {
		Namespace             string
		Initial               int
		Ratio                 float64
		Host, Bind            string
		Policy                allocator.Policy
		MaxFailures           int
		Queue                 podspec.QueueSystem
		PodGroup, CheckPeer   bool
		Command               []string
		PollEvery             time.Duration
		QPS                   float32
		TokenFile, TokenKey   string
		ExecutorConfigHasKeys bool
	}
	tests := map[string]struct {
		pairs []string
		env   map[string]string
		want  summary
	}{
		"defaults": {
			pairs: []string{"spark.driver.host=127.0.0.1"},
			want: summary{Namespace: "spark", Initial: 2, Ratio: 0.8, Host: "127.0.0.1", Bind: "127.0.0.1",
				Policy: "adaptive", MaxFailures: 4, CheckPeer: true, Command: []string{"/app"},
				PollEvery: 30 * time.Second, QPS: 50, TokenKey: "spark.kubernetes.authenticate.oauthTokenFile",
				ExecutorConfigHasKeys: true},
		},
		"the pod's IP, spark's policy, a Volcano client-mode driver": {
			pairs: []string{"spark.executor.instances=5", "drover.kubernetes.allocation.policy=spark",
				"spark.scheduler.minRegisteredResourcesRatio=0.5", "spark.kubernetes.scheduler.name=volcano",
				"drover.kubernetes.executor.checkPeerAddress=false"},
			env: map[string]string{"DROVER_DRIVER_POD_IP": "10.0.0.7"},
			want: summary{Namespace: "spark", Initial: 5, Ratio: 0.5, Host: "10.0.0.7", Bind: "0.0.0.0",
				Policy: "spark", MaxFailures: 10, Queue: podspec.QueueVolcano, PodGroup: true,
				Command: []string{"/app"}, PollEvery: 30 * time.Second, QPS: 50,
				TokenKey: "spark.kubernetes.authenticate.oauthTokenFile", ExecutorConfigHasKeys: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := Load(load(t, tc.pairs...), appID, func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			got := summary{Namespace: o.Namespace, Initial: o.InitialExecutors, Ratio: o.MinRegisteredRatio,
				Host: o.DriverHost, Bind: o.BindAddress, Policy: o.Allocator.Policy, MaxFailures: o.Lifecycle.MaxExecutorFailures,
				Queue: o.Queue.System, PodGroup: o.PodGroup != nil, CheckPeer: o.CheckPeerAddress, Command: o.Executor.Command,
				PollEvery: o.PollInterval, QPS: o.Client.QPS, TokenFile: o.Client.Credentials.OAuthTokenFile,
				TokenKey: o.Client.Credentials.OAuthTokenFileKey, ExecutorConfigHasKeys: len(o.ExecutorConfig) > 0}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadBadInput: Load fails as CheckConf, which drover submit runs,
// does: one error naming the key.
func TestLoadBadInput(t *testing.T) {
	tests := map[string]struct {
		pair string
		want string
	}{
		"relative binary": {"drover.kubernetes.executor.binary=app",
			"drover.kubernetes.executor.binary=app: expected the absolute path of the application binary in the executor image"},
		"restart without a pod": {"spark.kubernetes.driver.restartPolicy=OnFailure",
			"spark.kubernetes.driver.restartPolicy=OnFailure needs spark.submit.deployMode=cluster"},
		"missing template": {"spark.kubernetes.executor.podTemplateFile=/nonexistent/t.yaml", "spark.kubernetes.executor.podTemplateFile"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conf := load(t, tc.pair)
			_, err := Load(conf, appID, func(string) string { return "" })
			if err == nil {
				t.Fatal("Load succeeded")
			}
			check := CheckConf(conf, appID, nil)
			if check == nil || err.Error() != check.Error() {
				t.Errorf("Load: %v; CheckConf: %v", err, check)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}
