package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/executorid"
)

// BenchmarkSchedulerDecisions measures the task scheduler alone, with no
// RPC and no backend: rounds of resource offers from every executor's
// cores and the launches they yield, then the launched tasks' statuses,
// until a task set of 100,000 tasks has finished. The decisions/s metric
// (one launch and one status each) is the ceiling the scheduler puts on
// any backend's task throughput; allocs/op over 100,000 is its allocations
// per task.
//
//	go test -run '^$' -bench SchedulerDecisions -benchmem ./internal/scheduler/
func BenchmarkSchedulerDecisions(b *testing.B) {
	const tasks = 100_000
	for _, c := range []struct{ executors, cores int }{{4, 1}, {100, 4}, {10_000, 1}} {
		b.Run(fmt.Sprintf("executors=%d/cores=%d", c.executors, c.cores), func(b *testing.B) {
			offers := make([]Offer, c.executors)
			for i := range offers {
				offers[i] = Offer{ExecutorID: executorid.ID(i + 1), Cores: c.cores}
			}
			spec := specOf(tasks, nil)
			statuses := make([]Status, 0, c.executors*c.cores)
			b.ReportAllocs()
			for b.Loop() {
				s, _ := newTestScheduler(1)
				ts := s.Submit(spec)
				for done := 0; done < tasks; {
					launched := s.ResourceOffers(offers)
					statuses = statuses[:0]
					for _, t := range launched {
						statuses = append(statuses, Status{TaskID: t.TaskID, ExecutorID: t.ExecutorID, State: Finished,
							Duration: time.Microsecond})
					}
					s.StatusUpdates(statuses)
					done += len(launched)
				}
				if err := ts.Err(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(2*tasks*b.N)/b.Elapsed().Seconds(), "decisions/s")
			b.ReportMetric(float64(tasks*b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}
