//go:build integration

package drover

import (
	"bytes"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
	var pods []corev1.Pod
	var cms []string
	pollUntil(30*time.Second, 100*time.Millisecond, func() bool {
		pods, cms = appObjects(t, env, ns)
		return len(pods) == 0
	})
	if len(pods) != 0 || len(cms) != 0 {
		t.Errorf("%d executor pods and config maps %v remain after the application", len(pods), cms)
	}
}
