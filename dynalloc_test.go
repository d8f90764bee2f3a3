package drover

import (
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/backend/coarse"
)

var testSleepy = Register("test.sleepy", func(tc *TaskContext, n int) (int, error) {
	select {
	case <-time.After(20 * time.Millisecond):
	case <-tc.Done():
		return 0, tc.Err()
	}
	return 2 * n, nil
})

// executorCount samples the registered executors every 20 ms until stop
// is closed, and returns the most seen at once.
func executorCount(ctx *Context) (peak func() int, stop func()) {
	lister := ctx.backend.(interface{ Executors() []coarse.ExecutorInfo })
	var mu sync.Mutex
	most := 0
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			n := len(lister.Executors())
			mu.Lock()
			most = max(most, n)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() int { mu.Lock(); defer mu.Unlock(); return most }, func() { close(done); <-stopped }
}

// dynamicAllocationJob runs two jobs of 200 short tasks with dynamic
// allocation from zero executors: each scales up, gets the right answer,
// and the executors go once idle.
func dynamicAllocationJob(t *testing.T) func(ctx *Context) error {
	return func(ctx *Context) error {
		lister := ctx.backend.(interface{ Executors() []coarse.ExecutorInfo })
		inputs := make([]int, 200)
		for i := range inputs {
			inputs[i] = i
		}
		for job := 1; job <= 2; job++ {
			peak, stop := executorCount(ctx)
			out, err := RunPartitions(ctx, testSleepy, inputs)
			stop()
			if err != nil {
				return err
			}
			for i, v := range out {
				if v != 2*i {
					t.Fatalf("job %d: result %d = %d, want %d", job, i, v, 2*i)
				}
			}
			if p := peak(); p < 2 {
				t.Errorf("job %d: at most %d executors; dynamic allocation did not scale up", job, p)
			}
			pollUntil(20*time.Second, 50*time.Millisecond, func() bool { return len(lister.Executors()) == 0 })
			if n := len(lister.Executors()); n > 0 {
				t.Fatalf("job %d: %d executors remain 20 s after the job, idle timeout 1 s", job, n)
			}
		}
		return nil
	}
}

var dynamicAllocationConf = []string{
	"spark.dynamicAllocation.enabled=true",
	"spark.dynamicAllocation.minExecutors=0",
	"spark.dynamicAllocation.maxExecutors=4",
	"spark.dynamicAllocation.executorIdleTimeout=1s",
	"spark.dynamicAllocation.schedulerBacklogTimeout=200ms",
}

func TestDynamicAllocationLocalCluster(t *testing.T) {
	runJob(t, "local-cluster[4,1,256]", dynamicAllocationJob(t), dynamicAllocationConf...)
}
