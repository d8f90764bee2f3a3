//go:build integration

package k8s

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/testenv"
)

// queueBenchN is each application's executors in BenchmarkQueueTwoApps
// (DROVER_QUEUE_BENCH_N, default 500).
func queueBenchN() int {
	if n, err := strconv.Atoi(os.Getenv("DROVER_QUEUE_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return 500
}

// queueBenchEnv has room for both applications at once (the run without
// Kueue) and a Kueue for the run with it.
var queueBenchEnv = &testenv.Shared{Options: testenv.Options{Scheduler: true, ControllerManager: true,
	KwokNodes: kwokNodesFor(2 * queueBenchN()), Kueue: true}}

// twoAppsRun is one run of two applications of n executors each.
type twoAppsRun struct {
	// elapsed is from the first Start until both jobs ended and both
	// applications stopped.
	elapsed time.Duration
	// registered is, per application, from its Start until all its
	// executors registered.
	registered [2]time.Duration
	// driverWrites are both drivers' API writes; allWrites every client's
	// writes of pods, workloads and events (the API server's counters).
	driverWrites, allWrites int
}

// BenchmarkQueueTwoApps runs two applications of N executors (static
// allocation, so each is one gang) through one Kueue ClusterQueue with
// quota for N executors, against the same two on the same control plane
// without Kueue, where both run at once. Each application registers its N
// executors, runs a job of N short tasks and stops.
//
//	DROVER_QUEUE_BENCH_N=500 go test -run '^$' -bench QueueTwoApps -benchtime 1x -timeout 30m ./internal/k8s/
func BenchmarkQueueTwoApps(b *testing.B) {
	env := queueBenchEnv.Env(b)
	n := queueBenchN()
	for b.Loop() {
		plain := twoApps(b, env, n, false)
		queued := twoApps(b, env, n, true)
		b.ReportMetric(plain.elapsed.Seconds(), "s-both-without-kueue")
		b.ReportMetric(queued.elapsed.Seconds(), "s-both-through-kueue")
		b.ReportMetric(queued.registered[0].Seconds(), "s-first-gang-registered")
		b.ReportMetric(float64(plain.driverWrites)/float64(2*n), "driver-writes/executor-without-kueue")
		b.ReportMetric(float64(queued.driverWrites)/float64(2*n), "driver-writes/executor-kueue")
		b.ReportMetric(float64(plain.allWrites)/float64(2*n), "all-writes/executor-without-kueue")
		b.ReportMetric(float64(queued.allWrites)/float64(2*n), "all-writes/executor-kueue")
	}
}

// twoApps starts two applications of n executors at once in a namespace
// of their own, through a queue with quota for n when kueue is set, and
// waits for both to register, run a job and stop.
func twoApps(b *testing.B, env *testenv.Env, n int, kueue bool) twoAppsRun {
	var ns string
	pairs := []string{"spark.executor.instances=" + strconv.Itoa(n),
		"spark.scheduler.minRegisteredResourcesRatio=1", "spark.scheduler.maxRegisteredResourcesWaitingTime=15m",
		"spark.kubernetes.allocation.batch.delay=1s"}
	if kueue {
		ns = newQueueNamespace(b, env, n)
	} else {
		ns = env.NewNamespace(b)
		pairs = append(pairs, "drover.kubernetes.queue=")
	}
	resources := []string{"pods", "workloads", "events"}
	before := apiserverRequests(b, env, resources...)
	var r twoAppsRun
	start := time.Now()
	var wg sync.WaitGroup
	apps := make([]*queueApp, 2)
	errs := make(chan error, 2)
	for i := range apps {
		a, err := startQueueApp(b, env, ns, fmt.Sprintf("two-%d", i), pairs...)
		if err != nil {
			b.Fatal(err)
		}
		apps[i] = a
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			if err := a.cl.Backend().WaitReady(ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", a.id, err)
				return
			}
			r.registered[i] = time.Since(start)
			a.run(n, 10*time.Minute)
			a.stop()
		})
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	for _, a := range apps {
		r.driverWrites += writes(a.counter.snapshot())
	}
	for k, v := range apiserverRequests(b, env, resources...).Since(before).Counts() {
		switch verb, _, _ := strings.Cut(k, " "); verb {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
			r.allWrites += v
		}
	}
	mode := "without kueue"
	if kueue {
		mode = "through one ClusterQueue of quota " + strconv.Itoa(n)
	}
	b.Logf("2 × %d executors %s: both done in %s; registered after %s and %s; driver writes %d (%.3f per executor); "+
		"all clients' writes of pods, workloads and events %d (%.3f per executor)", n, mode, r.elapsed.Round(10*time.Millisecond),
		r.registered[0].Round(10*time.Millisecond), r.registered[1].Round(10*time.Millisecond),
		r.driverWrites, float64(r.driverWrites)/float64(2*n), r.allWrites, float64(r.allWrites)/float64(2*n))
	return r
}
