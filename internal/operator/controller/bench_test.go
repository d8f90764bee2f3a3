//go:build integration

package controller_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/operator/controller"
	"github.com/drover-project/drover/internal/testenv"
)

// benchOperatorEnv makes this test binary, started by
// BenchmarkOperatorSubmissions, run the operator on the kubeconfig it
// names until SIGTERM instead of running tests: the operator in a process
// of its own, whose CPU time is the controller's alone.
const benchOperatorEnv = "DROVER_OPERATOR_BENCH_KUBECONFIG"

func init() {
	kubeconfig := os.Getenv(benchOperatorEnv)
	if kubeconfig == "" {
		return
	}
	os.Exit(runBenchOperator(kubeconfig))
}

func runBenchOperator(kubeconfig string) int {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := controller.Run(ctx, cfg, controller.Options{Logger: log}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// BenchmarkOperatorSubmissions creates DroverApplications all at once
// (2,000 by default; DROVER_OPERATOR_BENCH_N) whose drivers land on kwok
// nodes, with one operator replica running in a process of its own, and
// reports how fast it turns them into driver pods: submissions a minute
// (the first create sent to the last driver pod seen), each one's latency
// from its create's answer to its driver pod's creation seen by a watch
// (p50, p99), the operator's CPU time per application, and the API
// server's requests per application by kind (all clients: the
// benchmark's own create of each application is one of them).
func BenchmarkOperatorSubmissions(b *testing.B) {
	n := 2000
	if v := os.Getenv("DROVER_OPERATOR_BENCH_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("DROVER_OPERATOR_BENCH_N=%q: want a positive integer", v)
		}
	}
	env := testenv.New(b, testenv.Options{Scheduler: true, KwokNodes: 4, StartTimeout: 3 * time.Minute})
	ctx := b.Context()
	paths, _ := filepath.Glob("../crds/*.yaml")
	if err := env.InstallCRDs(ctx, paths...); err != nil {
		b.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		ns := fmt.Sprintf("operator-bench-%d", i)
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := submit.ApplyRBAC(ctx, env.Client, submit.RBACOptions{Namespace: ns, Unconfined: true}, submit.NamespaceOptions{}); err != nil {
			b.Fatal(err)
		}
		benchOperatorRound(b, env, c, self, ns, n)
	}
}

func benchOperatorRound(b *testing.B, env *testenv.Env, c client.Client, self, ns string, n int) {
	ctx := b.Context()
	// The operator, started before the clock and ready when its first
	// reconcile of a probe application has made a pod.
	op := exec.Command(self, "-test.run=^$")
	op.Env = append(os.Environ(), benchOperatorEnv+"="+env.Kubeconfig)
	opLog := filepath.Join(b.TempDir(), "operator.log")
	logf, err := os.Create(opLog)
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	op.Stdout, op.Stderr = logf, logf
	if err := op.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = op.Process.Signal(syscall.SIGTERM)
		_ = op.Wait()
		if b.Failed() {
			out, _ := os.ReadFile(opLog)
			b.Logf("operator's log:\n%s", out)
		}
	}()

	seen := make(chan string, n+1)
	w, err := env.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "spark-role=driver"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	podSeen := map[string]time.Time{}
	var mu sync.Mutex
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			for _, o := range p.OwnerReferences {
				if o.Kind != "DroverApplication" {
					continue
				}
				mu.Lock()
				if _, dup := podSeen[o.Name]; !dup {
					podSeen[o.Name] = time.Now()
					mu.Unlock()
					seen <- o.Name
				} else {
					mu.Unlock()
				}
			}
		}
	}()
	if err := c.Create(ctx, kwokDriverApp(ns, "probe")); err != nil {
		b.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(2 * time.Minute):
		b.Fatal("the operator made no driver pod for the probe application within 2 minutes")
	}

	before, err := env.APIServerRequests(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := processCPU(b, op.Process.Pid)
	b.ResetTimer()
	start := time.Now()
	created := make([]time.Time, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				if err := c.Create(ctx, kwokDriverApp(ns, fmt.Sprintf("app-%05d", i))); err != nil {
					b.Errorf("creating app-%05d: %v", i, err)
				}
				created[i] = time.Now()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	createdAll := time.Since(start)
	deadline := time.After(10 * time.Minute)
	for got := 0; got < n; {
		select {
		case <-seen:
			got++
		case <-deadline:
			b.Fatalf("%d of %d driver pods after 10 minutes", got, n)
		}
	}
	mu.Lock()
	var last time.Time
	lat := make([]time.Duration, 0, n)
	for i := range n {
		at := podSeen[fmt.Sprintf("app-%05d", i)]
		lat = append(lat, at.Sub(created[i]))
		if at.After(last) {
			last = at
		}
	}
	mu.Unlock()
	wall := last.Sub(start)
	b.StopTimer()
	cpu := processCPU(b, op.Process.Pid) - cpu0
	after, err := env.APIServerRequests(ctx)
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	perMin := float64(n) / wall.Minutes()
	b.ReportMetric(perMin, "submissions/min")
	b.ReportMetric(lat[len(lat)/2].Seconds()*1000, "p50-ms")
	b.ReportMetric(lat[len(lat)*99/100].Seconds()*1000, "p99-ms")
	b.ReportMetric(cpu.Seconds()*1000/float64(n), "operator-cpu-ms/app")
	b.ReportMetric(createdAll.Seconds(), "create-all-s")
	var kinds []string
	total := 0.0
	for kind, a := range after {
		d := float64(a.Count - before[kind].Count)
		if d <= 0 {
			continue
		}
		total += d
		if d >= float64(n)/10 {
			kinds = append(kinds, fmt.Sprintf("%s %.2f", kind, d/float64(n)))
		}
	}
	slices.Sort(kinds)
	b.ReportMetric(total/float64(n), "api-requests/app")
	b.Logf("%d applications: %.0f submissions/min (%s from the first create to the last driver pod; creates sent in %s); latency p50 %s, p99 %s, max %s; operator CPU %s (%.1f ms/app); API requests per application, all clients: %.2f — %s",
		n, perMin, wall.Round(time.Millisecond), createdAll.Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond),
		lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), cpu.Round(time.Millisecond),
		cpu.Seconds()*1000/float64(n), total/float64(n), strings.Join(kinds, ", "))
}

// processCPU is the user and system CPU time process pid has used.
func processCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses.
	_, rest, _ := strings.Cut(string(raw), ") ")
	f := strings.Fields(rest)
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ
	return time.Duration(utime+stime) * time.Second / ticks
}
