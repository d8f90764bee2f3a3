package coarse

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/config"
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
