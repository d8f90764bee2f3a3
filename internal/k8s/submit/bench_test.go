//go:build integration

package submit_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/testenv"
	"github.com/drover-project/drover/internal/testenv/procnode"
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

// BenchmarkSubmitToResult is a cluster-mode application end to end on the
// process node: examples/wordcount with two executors submitted by drover
// submit, timed until its driver pod is Running (to-running) and until
// submit exits with the application's success (ns/op, s-to-result). The
// limit it is compared with, the same job in a bare pod
// (BenchmarkBarePodToResult), runs in turns with it:
// bare-pod-s-to-result, and submit/bare-pod the ratio of the two in one run.
// With DROVER_SUBMIT_TIMELINE set, each run logs its timeline and the
// requests the API server served during the submission and during the
// bare pod's run, with its mean time to answer each kind: the API server
// answers the submission's writes on their way, and its time is the
// cluster's, not drover's.
func BenchmarkSubmitToResult(b *testing.B) {
	env := cluster.Env(b)
	_, wordcount := binaries(b)
	input := wordInput(b)
	var toRunning, toResult, bare time.Duration
	bareNS := env.NewNamespace(b)
	runs := 0
	for b.Loop() {
		// The bare pod of the comparison runs in turns with the submission,
		// first in every other iteration, so both see the same machine
		// (other builds and benchmarks share its two cores); its time is not
		// in ns/op.
		var bareRun time.Duration
		if runs%2 == 1 {
			b.StopTimer()
			bareRun = barePodRun(b, env, bareNS, fmt.Sprintf("bare-%d", runs), wordcount, input)
			b.StartTimer()
		}
		ns := restrictedNamespace(b, env)
		running := phaseTime(b, env, ns, "spark-role=driver", corev1.PodRunning)
		var tl *timeline
		stopTimeline := func() {}
		var served testenv.Requests
		if os.Getenv("DROVER_SUBMIT_TIMELINE") != "" {
			// What the API server served during the submission, and how
			// long it took to answer each kind of request.
			served = apiserverRequests(b, env)
		}
		start := time.Now()
		if served != nil {
			tl, stopTimeline = watchTimeline(b, env, ns, start)
		}
		args := []string{"--name", "wordcount"}
		if os.Getenv("DROVER_SUBMIT_TIMELINE") == "debug" {
			// The timeline then has the driver's and executors' debug lines.
			args = append(args, "--conf", "drover.log.level=debug")
		}
		r := drover(b, env.Kubeconfig, 3*time.Minute, clusterArgs(env, ns, append(args, "local://"+wordcount, input, "3")...)...)
		end := time.Now()
		toResult += end.Sub(start)
		if r.code != 0 {
			b.Fatalf("drover submit: exit code %d\n%s", r.code, r.stderr)
		}
		toRunning += (<-running).Sub(start)
		driver := submittedPod(b, r)
		checkWordCount(b, env, ns, driver)
		if tl != nil {
			tl.add(end, "drover submit exited")
			stopTimeline()
			logTimeline(b, env, ns, tl)
			b.Logf("requests the API server served during the submission (its mean time to answer one): %s",
				apiserverRequests(b, env).Since(served))
		}
		if runs%2 == 0 {
			b.StopTimer()
			bareRun = barePodRun(b, env, bareNS, fmt.Sprintf("bare-%d", runs), wordcount, input)
			b.StartTimer()
		}
		bare += bareRun
		// Each pair, for medians: on a shared machine one slow run moves
		// the means.
		b.Logf("run %d: submission %.1f ms, bare pod %.1f ms", runs,
			float64(end.Sub(start).Microseconds())/1000, float64(bareRun.Microseconds())/1000)
		runs++
	}
	b.ReportMetric(float64(toResult.Nanoseconds())/float64(runs), "ns/op")
	b.ReportMetric(toRunning.Seconds()/float64(runs), "s-to-running")
	b.ReportMetric(toResult.Seconds()/float64(runs), "s-to-result")
	b.ReportMetric(bare.Seconds()/float64(runs), "bare-pod-s-to-result")
	b.ReportMetric(toResult.Seconds()/bare.Seconds(), "submit/bare-pod")
}

// BenchmarkBarePodToResult is the limit for BenchmarkSubmitToResult: the
// same word count run by a plain pod on the process node in local mode
// (no submission, no executors), from the pod's creation until it
// succeeded. What drover adds on top is submission, the driver's executor
// pods and their registration.
func BenchmarkBarePodToResult(b *testing.B) {
	env := cluster.Env(b)
	_, wordcount := binaries(b)
	input := wordInput(b)
	ns := env.NewNamespace(b)
	var total time.Duration
	runs := 0
	for b.Loop() {
		total += barePodRun(b, env, ns, fmt.Sprintf("bare-%d", runs), wordcount, input)
		runs++
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(runs), "ns/op")
	b.ReportMetric(total.Seconds()/float64(runs), "s-to-result")
}

// barePodRun runs the word count in pod ns/name on the process node, in
// local mode, and returns the time from its creation until it succeeded.
func barePodRun(b *testing.B, env *testenv.Env, ns, name, wordcount, input string) time.Duration {
	done := phaseTime(b, env, ns, "bench="+name, corev1.PodSucceeded)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": name}},
		Spec: corev1.PodSpec{
			NodeSelector:  map[string]string{procnode.NodeLabel: "true"},
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "drover-test:latest",
				Command: []string{wordcount, "--master", "local[2]", input, "3"}}},
		},
	}
	var served testenv.Requests
	if os.Getenv("DROVER_SUBMIT_TIMELINE") != "" {
		served = apiserverRequests(b, env)
	}
	start := time.Now()
	if _, err := env.Client.CoreV1().Pods(ns).Create(b.Context(), pod, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	elapsed := (<-done).Sub(start)
	if served != nil {
		b.Logf("requests the API server served during the bare pod's run: %s", apiserverRequests(b, env).Since(served))
	}
	checkWordCount(b, env, ns, name)
	return elapsed
}

// apiserverRequests reads the API server's request metrics.
func apiserverRequests(b *testing.B, env *testenv.Env) testenv.Requests {
	r, err := env.APIServerRequests(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// logTimeline logs one submission's timeline: the pods' stages and the
// driver's and executors' log lines.
func logTimeline(b *testing.B, env *testenv.Env, ns string, tl *timeline) {
	for _, name := range tl.podNames() {
		if log, err := env.ProcessNode.Logs(ns, name); err == nil {
			tl.addLog(name, log)
		}
	}
	b.Logf("submission timeline (ms from drover submit's start):\n%s", tl)
}

// checkWordCount fails b unless pod ns/name printed the count of
// wordInput's most frequent word.
func checkWordCount(b testing.TB, env *testenv.Env, ns, name string) {
	logs, err := env.ProcessNode.Logs(ns, name)
	if err != nil {
		b.Fatal(err)
	}
	if !strings.Contains(string(logs), "the\t400\n") {
		b.Fatalf("pod %s printed no word count:\n%s", name, logs)
	}
}

// wordInput is a small text whose most frequent word is "the", 400 times.
func wordInput(b testing.TB) string {
	path := filepath.Join(b.TempDir(), "input.txt")
	var text strings.Builder
	for i := range 200 {
		fmt.Fprintf(&text, "the quick brown fox %d jumps over the lazy dog\n", i%7)
	}
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// phaseTime watches the pods of ns that match selector and sends the time
// the first of them reached phase; it fails b if none did within 3 minutes.
func phaseTime(b *testing.B, env *testenv.Env, ns, selector string, phase corev1.PodPhase) <-chan time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	w, err := env.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	out := make(chan time.Time, 1)
	go func() {
		defer cancel()
		defer w.Stop()
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Status.Phase == phase {
				out <- time.Now()
				return
			}
		}
		b.Errorf("no pod %s in %s reached %s within 3 minutes", selector, ns, phase)
		out <- time.Now()
	}()
	return out
}
