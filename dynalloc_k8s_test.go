//go:build integration

package drover

import (
	"bytes"
	"testing"
	"time"
)

func TestDynamicAllocationOnKubernetes(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	var stderr bytes.Buffer
	args := k8sArgs(env, ns, append([]string{"spark.executor.memory=256m"}, dynamicAllocationConf...)...)
	if code := runDriver(args, &stderr, dynamicAllocationJob(t)); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	deadline := time.Now().Add(30 * time.Second)
	pods, _ := appObjects(t, env, ns)
	for len(pods) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		pods, _ = appObjects(t, env, ns)
	}
	if len(pods) != 0 {
		t.Errorf("%d executor pods remain", len(pods))
	}
}
