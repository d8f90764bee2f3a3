//go:build integration

package drover

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	var pods []corev1.Pod
	pollUntil(30*time.Second, 100*time.Millisecond, func() bool {
		pods, _ = appObjects(t, env, ns)
		return len(pods) == 0
	})
	if len(pods) != 0 {
		t.Errorf("%d executor pods remain", len(pods))
	}
}
