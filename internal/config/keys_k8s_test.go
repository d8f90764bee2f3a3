package config

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestKubernetesDefaults(t *testing.T) {
	c := New()
	for name, tc := range map[string]struct{ got, want any }{
		"namespace":              {KubernetesNamespace.Get(c), "default"},
		"pull policy":            {KubernetesContainerImagePullPolicy.Get(c), "IfNotPresent"},
		"driver master":          {KubernetesDriverMaster.Get(c), "https://kubernetes.default.svc"},
		"batch size":             {KubernetesAllocationBatchSize.Get(c), 20},
		"batch delay":            {KubernetesAllocationBatchDelay.Get(c), time.Second},
		"max pending pods":       {KubernetesAllocationMaxPendingPods.Get(c), math.MaxInt32},
		"allocation maximum":     {KubernetesAllocationMaximum.Get(c), math.MaxInt32},
		"executor timeout":       {KubernetesAllocationExecutorTimeout.Get(c), 600 * time.Second},
		"readiness timeout":      {KubernetesAllocationDriverReadinessTimeout.Get(c), time.Second},
		"polling interval":       {KubernetesExecutorAPIPollingInterval.Get(c), 30 * time.Second},
		"event interval":         {KubernetesExecutorEventProcessingInterval.Get(c), time.Second},
		"missing pod delta":      {KubernetesExecutorMissingPodDetectDelta.Get(c), 30 * time.Second},
		"deleted cache timeout":  {KubernetesExecutorDeletedExecutorsCacheTimeout.Get(c), 180 * time.Second},
		"delete grace period":    {KubernetesDynamicAllocationDeleteGracePeriod.Get(c), 5 * time.Second},
		"termination grace":      {KubernetesExecutorTerminationGracePeriod.Get(c), 30 * time.Second},
		"delete on termination":  {KubernetesExecutorDeleteOnTermination.Get(c), true},
		"check all containers":   {KubernetesExecutorCheckAllContainers.Get(c), true},
		"wait app completion":    {KubernetesSubmissionWaitAppCompletion.Get(c), true},
		"report interval":        {KubernetesReportInterval.Get(c), time.Second},
		"disable config map":     {KubernetesExecutorDisableConfigMap.Get(c), false},
		"tmpfs":                  {KubernetesLocalDirsTmpfs.Get(c), false},
		"policy":                 {KubernetesAllocationPolicy.Get(c), "adaptive"},
		"create concurrency":     {KubernetesAllocationCreateConcurrency.Get(c), 16},
		"qps":                    {KubernetesClientQPS.Get(c), 50.0},
		"burst":                  {KubernetesClientBurst.Get(c), 100},
		"start timeout":          {KubernetesExecutorStartTimeout.Get(c), 300 * time.Second},
		"poll enabled":           {KubernetesExecutorPollEnabled.Get(c), false},
		"check peer address":     {KubernetesExecutorCheckPeerAddress.Get(c), true},
		"executor image (unset)": {KubernetesExecutorContainerImage.Get(c), ""},
		"max failures (unset)":   {ExecutorMaxNumFailures.IsSet(c), false},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", name, diff)
		}
	}
}

func TestKubernetesFallbacks(t *testing.T) {
	c := New().
		Set("spark.kubernetes.container.image", "base:1").
		Set("spark.kubernetes.scheduler.name", "volcano").
		Set("spark.kubernetes.authenticate.driver.serviceAccountName", "driver-sa")
	if got := KubernetesExecutorContainerImage.Get(c); got != "base:1" {
		t.Errorf("executor image = %q, want the fallback base:1", got)
	}
	if got := KubernetesDriverContainerImage.Get(c); got != "base:1" {
		t.Errorf("driver image = %q, want the fallback base:1", got)
	}
	if got := KubernetesExecutorSchedulerName.Get(c); got != "volcano" {
		t.Errorf("executor scheduler = %q, want volcano", got)
	}
	if got := KubernetesExecutorServiceAccountName.Get(c); got != "driver-sa" {
		t.Errorf("executor service account = %q, want driver-sa", got)
	}
	c.Set("spark.kubernetes.executor.container.image", "exec:2").Set("spark.kubernetes.executor.scheduler.name", "yunikorn")
	if got := KubernetesExecutorContainerImage.Get(c); got != "exec:2" {
		t.Errorf("executor image = %q, want exec:2", got)
	}
	if got := KubernetesExecutorSchedulerName.Get(c); got != "yunikorn" {
		t.Errorf("executor scheduler = %q, want yunikorn", got)
	}
}

func TestKubernetesValidation(t *testing.T) {
	testCases := map[string]struct {
		key, value string
		wantErr    string // "" = valid
	}{
		"namespace":                     {"spark.kubernetes.namespace", "team-a", ""},
		"namespace with capitals":       {"spark.kubernetes.namespace", "TeamA", "expected a string that is a DNS-1123 label"},
		"pull policy, any case":         {"spark.kubernetes.container.image.pullPolicy", "always", ""},
		"pull policy":                   {"spark.kubernetes.container.image.pullPolicy", "Sometimes", "expected one of Always, Never, IfNotPresent"},
		"cores as millicores":           {"spark.kubernetes.executor.request.cores", "500m", ""},
		"cores as a fraction":           {"spark.kubernetes.executor.limit.cores", "0.5", ""},
		"zero cores":                    {"spark.kubernetes.executor.request.cores", "0", "expected a string that is a CPU quantity > 0"},
		"cores with a memory unit":      {"spark.kubernetes.executor.limit.cores", "2Gi", "expected a string that is a CPU quantity > 0"},
		"pod name prefix":               {"spark.kubernetes.executor.podNamePrefix", "etl.nightly-run", ""},
		"pod name prefix too long":      {"spark.kubernetes.executor.podNamePrefix", strings.Repeat("a", 238), "DNS-1123 subdomain of at most 237"},
		"pod name prefix with capitals": {"spark.kubernetes.executor.podNamePrefix", "ETL", "DNS-1123 subdomain"},
		"batch size 0":                  {"spark.kubernetes.allocation.batch.size", "0", "expected an integer ≥ 1"},
		"batch delay 100ms":             {"spark.kubernetes.allocation.batch.delay", "100ms", "expected a duration such as 30s, 5m or 2h > 100ms"},
		"batch delay bare number is ms": {"spark.kubernetes.allocation.batch.delay", "500", ""},
		"max pending pods infinity":     {"spark.kubernetes.allocation.maxPendingPods", "infinity", ""},
		"termination grace whole secs":  {"spark.kubernetes.executor.terminationGracePeriodSeconds", "1500ms", "of whole seconds"},
		"termination grace bare secs":   {"spark.kubernetes.executor.terminationGracePeriodSeconds", "60", ""},
		"policy":                        {"drover.kubernetes.allocation.policy", "fast", "expected one of adaptive, spark"},
		"qps":                           {"drover.kubernetes.client.qps", "0", "expected a number > 0"},
		"start timeout 0 disables":      {"drover.kubernetes.executor.startTimeout", "0", ""},
		"max failures":                  {"spark.executor.maxNumFailures", "0", "expected an integer ≥ 1"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			err := New().Set(tc.key, tc.value).Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want valid", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestKubernetesKeyFamiliesAreKnown(t *testing.T) {
	for _, key := range []string{
		"spark.kubernetes.executor.label.team",
		"spark.kubernetes.executor.annotation.example.com/owner",
		"spark.kubernetes.driver.label.team",
		"spark.kubernetes.driver.annotation.a",
		"spark.kubernetes.node.selector.pool",
		"spark.kubernetes.driver.node.selector.pool",
		"spark.kubernetes.executor.node.selector.pool",
		"spark.executorEnv.GODEBUG",
		"spark.kubernetes.executor.secrets.creds",
		"spark.kubernetes.executor.secretKeyRef.DB_PASSWORD",
		"spark.kubernetes.executor.volumes.persistentVolumeClaim.data.options.claimName",
		"spark.kubernetes.authenticate.oauthTokenFile",
		"spark.kubernetes.authenticate.submission.caCertFile",
		"spark.kubernetes.authenticate.driver.clientKeyFile",
	} {
		if !known(key) {
			t.Errorf("%s is not a known key", key)
		}
	}
}

func TestKubernetesTokensAreRedacted(t *testing.T) {
	c := New().Set("spark.kubernetes.authenticate.oauthToken", "t0k").
		Set("spark.kubernetes.authenticate.driver.oauthToken", "t1k").
		Set("spark.redaction.regex", "nothing-matches")
	for k, v := range c.Redacted() {
		if strings.Contains(v, "t0k") || strings.Contains(v, "t1k") {
			t.Errorf("%s=%s is not redacted", k, v)
		}
	}
}
