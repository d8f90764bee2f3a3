package submit_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkSubmitProcess is the CLI's overhead per submission: a drover
// submit process with spark.kubernetes.submission.waitAppCompletion=false,
// from its start until it exits, having created the driver pod, its config
// map and its service on the test control plane (spark-submit's JVM takes
// 2–8 s for this). The driver pods select no node, so they stay Pending.
//
//	DROVER_TESTBIN=... go test ./internal/k8s/submit -run '^$' -bench Submit
func BenchmarkSubmitProcess(b *testing.B) {
	env := cluster.Env(b)
	bin, _ := binaries(b)
	ns := env.NewNamespace(b)
	args := []string{"submit", "--master", "k8s://" + env.URL, "--deploy-mode", "cluster",
		"--conf", "spark.kubernetes.namespace=" + ns,
		"--conf", "spark.kubernetes.container.image=drover-test:latest",
		"--conf", "spark.kubernetes.node.selector.drover.dev/no-such-node=true",
		"--conf", "spark.kubernetes.submission.waitAppCompletion=false",
		"local:///app/bench"}
	env2 := append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	var toPod time.Duration
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env2
		start := time.Now()
		out, err := cmd.CombinedOutput()
		elapsed := time.Since(start)
		cancel()
		if err != nil {
			b.Fatalf("drover submit: %v\n%s", err, out)
		}
		toPod += elapsed
	}
	b.ReportMetric(float64(toPod.Milliseconds())/float64(b.N), "ms/submit")
	b.StopTimer()
	_ = env.Client.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
}

// BenchmarkHelp is the process time of drover --help: the CLI's start-up.
func BenchmarkHelp(b *testing.B) {
	bin, _ := binaries(b)
	for b.Loop() {
		if out, err := exec.Command(bin, "--help").CombinedOutput(); err != nil {
			b.Fatalf("drover --help: %v\n%s", err, out)
		}
	}
}
