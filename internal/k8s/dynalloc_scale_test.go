//go:build integration

package k8s

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dynalloc"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/settings"
)

// scaleTask keeps a simulated executor busy: the backlog lasts while the
// executors ramp up.
const scaleTask = "k8s.test.busy"

func init() {
	if err := funcs.Register(scaleTask, func(ctx context.Context, _ funcs.Task, _ []byte) ([]byte, error) {
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
		return nil, nil
	}); err != nil {
		panic(err)
	}
}

// BenchmarkDynamicAllocationScaleUp starts an application with dynamic
// allocation from zero executors under a sustained backlog (tasks of 2 s,
// ten per executor of the maximum) and measures the time until the maximum
// is registered. It fails if any executor pod was deleted or the target
// went down while the backlog lasted: the ramp must not oscillate.
//
//	DROVER_DYNALLOC_N=500 go test -run '^$' -bench DynamicAllocationScaleUp -benchtime 1x ./internal/k8s/
func BenchmarkDynamicAllocationScaleUp(b *testing.B) {
	env := scaleEnv.Env(b)
	n := 500
	if v, err := strconv.Atoi(os.Getenv("DROVER_DYNALLOC_N")); err == nil && v > 0 {
		n = v
	}
	for b.Loop() {
		ns := env.NewNamespace(b)
		b.Setenv("KUBECONFIG", env.Kubeconfig)
		counter := &requestCounter{n: map[string]int{}}
		conf := config.New().
			Set("spark.kubernetes.namespace", ns).
			Set("spark.kubernetes.container.image", "drover-sim:latest").
			Set("spark.kubernetes.executor.podTemplateFile", kwokTemplate(b)).
			Set("spark.kubernetes.executor.disableConfigMap", "true").
			Set("spark.driver.host", "127.0.0.1").
			Set("spark.dynamicAllocation.enabled", "true").
			Set("spark.dynamicAllocation.minExecutors", "0").
			Set("spark.dynamicAllocation.maxExecutors", strconv.Itoa(n))
		log := slog.New(slog.DiscardHandler)
		app := master.App{ID: "drover-dynalloc-scale", Logger: log,
			Master: master.URL{Kind: master.Kubernetes, APIServer: env.URL}, Fail: func(error) {}}
		sched, cl, err := newCluster(scheduler.Options{MaxFailures: 4}, app, conf, loadOptions(b, app.ID, conf, nil), Deps{WrapTransport: counter.wrap})
		if err != nil {
			b.Fatal(err)
		}
		cfg, err := settings.DynamicAllocation(conf, 0)
		if err != nil {
			b.Fatal(err)
		}

		execCtx, stopExecs := context.WithCancel(context.Background())
		var execs sync.WaitGroup
		watchPods(b, env, ns, func(p *corev1.Pod) {
			execs.Add(1)
			go func() {
				defer execs.Done()
				_ = executor.Run(execCtx, executor.Options{DriverURL: cl.backend.URL(), AppID: app.ID,
					ExecutorID: mustExecutorID(b, p), PodName: p.Name, BindHost: p.Status.PodIP, Cores: 1, Logger: log})
			}()
		})

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		if err := cl.Start(ctx); err != nil {
			b.Fatal(err)
		}
		var downs atomic.Int64 // target decreases
		metrics := &dynalloc.Metrics{TargetChanged: func(dir string) {
			if dir == "down" {
				downs.Add(1)
			}
		}}
		m := &dynalloc.Manager{Config: cfg, Tasks: sched, Client: cl, Metrics: metrics, Logger: log,
			Executors: cl.backend.ExecutorIDs,
			Exclude:   cl.backend.ExcludeExecutor}
		go m.Run(ctx)

		tasks := make([]scheduler.TaskSpec, 10*n)
		for i := range tasks {
			tasks[i] = scheduler.TaskSpec{Partition: i}
		}
		start := time.Now()
		ts := sched.Submit(scheduler.TaskSetSpec{JobID: 1, StageID: 1, Func: scaleTask, Tasks: tasks})
		if wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true,
			func(context.Context) (bool, error) { return len(cl.backend.Executors()) >= n, nil }) != nil {
			b.Fatalf("%d of %d executors registered after 10 minutes", len(cl.backend.Executors()), n)
		}
		elapsed := time.Since(start)
		counter.mu.Lock()
		deletes := counter.n["DELETE"]
		counter.mu.Unlock()
		down := downs.Load()
		backlog := sched.PendingTasks()

		sched.Cancel(ts, fmt.Errorf("benchmark done"))
		cancel()
		stopCtx, stopCancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := cl.Stop(stopCtx); err != nil {
			b.Errorf("stop: %v", err)
		}
		stopCancel()
		stopExecs()
		execs.Wait()

		if backlog == 0 {
			b.Errorf("the backlog cleared before %d executors registered; the benchmark needs more tasks", n)
		}
		if deletes > 0 || down > 0 {
			b.Errorf("oscillation while the backlog lasted: %d pod deletions, %d target decreases", deletes, down)
		}
		b.ReportMetric(elapsed.Seconds(), "s-to-max")
		b.ReportMetric(float64(deletes), "deletes-during-backlog")
		b.Logf("dynamic allocation: 0 → %d executors registered in %s under a backlog of %d tasks; %d pod deletions",
			n, elapsed.Round(10*time.Millisecond), backlog, deletes)
	}
}
