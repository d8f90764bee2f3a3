package local

import (
	"context"
	"testing"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/scheduler"
)

// BenchmarkNoopTasksLocalCluster measures scheduling throughput: no-op tasks
// on local-cluster[4,1,512] (four executor processes of one core each, gRPC
// over loopback). Each op is one job of 20,000 tasks; the tasks/s metric is
// the figure to compare.
//
//	go test -run '^$' -bench NoopTasks -benchtime 5x ./internal/local/
func BenchmarkNoopTasksLocalCluster(b *testing.B) {
	benchmarkNoop(b, func(b *testing.B) *testCluster { return startCluster(b, 4, 1, 4, rpc.Auth{}) })
}

// BenchmarkNoopTasksLocalClusterNoPrefetch is the same with
// drover.scheduler.prefetch=0: one task per core at a time, as in Spark.
func BenchmarkNoopTasksLocalClusterNoPrefetch(b *testing.B) {
	old := prefetch
	prefetch = 0
	defer func() { prefetch = old }()
	BenchmarkNoopTasksLocalCluster(b)
}

// BenchmarkNoopTasksLocal is the same job in local[4]: goroutines, no RPC.
func BenchmarkNoopTasksLocal(b *testing.B) {
	benchmarkNoop(b, func(b *testing.B) *testCluster {
		s := scheduler.New(scheduler.Options{MaxFailures: 1})
		lb := NewBackend(s, 4, 0)
		s.SetBackend(lb)
		if err := lb.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = lb.Stop(context.Background()) })
		return &testCluster{sched: s}
	})
}

func benchmarkNoop(b *testing.B, start func(*testing.B) *testCluster) {
	const tasksPerJob = 20_000
	tc := start(b)
	payloads := repeat("", tasksPerJob)
	b.ResetTimer()
	for b.Loop() {
		if _, err := tc.run(context.Background(), "local.noop", payloads); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tasksPerJob*b.N)/b.Elapsed().Seconds(), "tasks/s")
}
