package driver

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/rpc"
)

// TestExecutorConfSendsNoSecrets: executors are sent where the object store
// is and how to address it, never its credentials (they take those from
// their own environment), nor anything else of the application's.
func TestExecutorConfSendsNoSecrets(t *testing.T) {
	c := config.New().
		Set("spark.network.timeout", "200s").
		Set("spark.hadoop.fs.s3a.endpoint", "http://127.0.0.1:7070").
		Set("spark.hadoop.fs.s3a.path.style.access", "true").
		Set("spark.hadoop.fs.s3a.endpoint.region", "eu-west-1").
		Set("spark.hadoop.fs.s3a.access.key", "AKIDEXAMPLE").
		Set("spark.hadoop.fs.s3a.secret.key", "secret").
		Set("spark.hadoop.fs.s3a.session.token", "token").
		Set("spark.authenticate.secret", "app-secret").
		Set("spark.app.name", "app")
	want := map[string]string{
		"spark.network.timeout":                 "200s",
		"spark.hadoop.fs.s3a.endpoint":          "http://127.0.0.1:7070",
		"spark.hadoop.fs.s3a.path.style.access": "true",
		"spark.hadoop.fs.s3a.endpoint.region":   "eu-west-1",
	}
	if diff := cmp.Diff(want, executorConf(c)); diff != "" {
		t.Errorf("executor configuration (-want +got):\n%s", diff)
	}
}

// TestExecutorsAreSentOnlyWhatTheyRead: the configuration in Registered is
// the executors' few keys, never credentials or other settings.
func TestExecutorsAreSentOnlyWhatTheyRead(t *testing.T) {
	c := config.New().
		Set("spark.kubernetes.authenticate.driver.oauthToken", "tok-123").
		Set("spark.hadoop.fs.s3a.secret.key", "s3-secret").
		Set("spark.authenticate.secret", "app-secret").
		Set("spark.network.timeout", "30s").
		Set("spark.executor.memory", "1g")
	got := backendOptions("drover-0123456789abcdef", c, rpc.Auth{}).Conf
	if diff := cmp.Diff(map[string]string{"spark.network.timeout": "30s"}, got); diff != "" {
		t.Errorf("configuration sent to executors (-want +got):\n%s", diff)
	}
}
