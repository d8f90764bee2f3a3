//go:build integration

package drover

import (
	"bytes"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestWordCountOnKubernetes runs a job with a shuffle on executor pods of
// the process node: map outputs are written by one pod's executor and
// fetched by the others over their pod IPs.
func TestWordCountOnKubernetes(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	lines := generatedLines(4000)
	path := writeText(t, lines)
	want := referenceWordCount(lines)

	var stderr bytes.Buffer
	var got map[string]int
	code := runDriver(k8sArgs(env, ns, "spark.executor.instances=2", "spark.executor.memory=256m",
		"spark.files.maxPartitionBytes=8000"), &stderr, func(ctx *Context) error {
		counts, err := ReduceByKey(FlatMap(TextFile(ctx, path), testWords), testSum, 3).Collect()
		got = mapOf(counts)
		return err
	})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("word counts on Kubernetes (-want +got):\n%s", diff)
	}
	deadline := time.Now().Add(30 * time.Second)
	pods, cms := appObjects(t, env, ns)
	for len(pods) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		pods, cms = appObjects(t, env, ns)
	}
	if len(pods) != 0 || len(cms) != 0 {
		t.Errorf("%d executor pods and config maps %v remain after the application", len(pods), cms)
	}
}
