package allocator

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// simCluster is a cluster whose scheduler binds and starts at most a fixed
// number of pods per tick, in creation order, and, with a capacity, no more
// than that many pods at all: the rest are Unschedulable.
type simCluster struct {
	clk      *clocktesting.FakeClock
	capacity int // 0: unlimited

	mu         sync.Mutex
	pods       map[executorid.ID]*simPod
	queue      []executorid.ID // pending, in creation order
	running    int
	creates    int
	maxLive    int
	maxPending int
}

type simPod struct {
	created       time.Time
	running       bool
	unschedulable bool
}

func (c *simCluster) CreateExecutorPod(_ context.Context, id executorid.ID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods[id] = &simPod{created: c.clk.Now()}
	c.queue = append(c.queue, id)
	c.creates++
	c.maxLive = max(c.maxLive, len(c.pods))
	c.maxPending = max(c.maxPending, len(c.pods)-c.running)
	return nil
}

func (c *simCluster) DeleteExecutorPods(_ context.Context, ids []executorid.ID, onlyPending bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if p := c.pods[id]; p != nil && !(onlyPending && p.running) {
			delete(c.pods, id)
			if p.running {
				c.running--
			}
		}
	}
	return nil
}

// admit starts up to k pending pods, within the capacity.
func (c *simCluster) admit(k int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k > 0 && len(c.queue) > 0 && (c.capacity == 0 || c.running < c.capacity) {
		id := c.queue[0]
		c.queue = c.queue[1:]
		if p := c.pods[id]; p != nil {
			p.running = true
			c.running++
			k--
		}
	}
	if c.capacity > 0 && c.running >= c.capacity {
		for _, id := range c.queue {
			if p := c.pods[id]; p != nil {
				p.unschedulable = true
			}
		}
	}
}

func (c *simCluster) snapshot() (snapshot.Snapshot, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := snapshot.Snapshot{Pods: map[executorid.ID]snapshot.ExecutorPod{}, Time: c.clk.Now()}
	running := 0
	for id, p := range c.pods {
		st, opts := snapshot.Pending, []podOpt{createdAt(p.created)}
		if p.running {
			st = snapshot.Running
			running++
		}
		if p.unschedulable {
			opts = append(opts, unschedulableCond)
		}
		s.Pods[id] = execPod(id, st, opts...)
	}
	return s, running
}

type simResult struct {
	ticks, rounds, creates, maxLive, maxPending int
}

// simulate runs the allocator loop against a cluster admitting perTick pods
// per batch delay until target executors run or maxTicks pass, and counts
// the ticks.
func simulate(t *testing.T, o Options, target, perTick, capacity, maxTicks int) simResult {
	var r simResult
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(t0)
		c := &simCluster{clk: clk, capacity: capacity, pods: map[executorid.ID]*simPod{}}
		a := New(o, c, clk, nil)
		var mu sync.Mutex
		a.observe = func(p Plan) {
			mu.Lock()
			defer mu.Unlock()
			if len(p.Create) > 0 {
				r.rounds++
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		a.SetTarget(target)
		s, _ := c.snapshot()
		a.OnSnapshot(s, nil)
		go func() { done <- a.Run(ctx) }()
		synctest.Wait()
		for r.ticks = 1; r.ticks < maxTicks; r.ticks++ {
			c.admit(perTick)
			s, running := c.snapshot()
			if running >= target {
				break
			}
			a.OnSnapshot(s, nil)
			synctest.Wait()
			clk.Step(o.BatchDelay)
			synctest.Wait()
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		r.creates, r.maxLive, r.maxPending = c.creates, c.maxLive, c.maxPending
		c.mu.Unlock()
	})
	return r
}

func TestSimulationAdaptiveVersusSpark(t *testing.T) {
	const target, perTick = 1000, 100
	spark := simulate(t, Options{Policy: PolicySpark, BatchSize: 20, BatchDelay: time.Second}, target, perTick, 0, 1000)
	adaptive := simulate(t, Options{Policy: PolicyAdaptive, BatchSize: 20, BatchDelay: time.Second}, target, perTick, 0, 1000)
	t.Logf("spark: %+v", spark)
	t.Logf("adaptive: %+v", adaptive)
	for name, r := range map[string]simResult{"spark": spark, "adaptive": adaptive} {
		if r.creates != target || r.maxLive > target {
			t.Errorf("%s: %d creates, up to %d pods at once; want exactly %d, never more", name, r.creates, r.maxLive, target)
		}
	}
	if spark.rounds != target/20 {
		t.Errorf("spark: %d creating rounds, want %d (batch 20)", spark.rounds, target/20)
	}
	// The cluster alone needs target/perTick ticks.
	if adaptive.ticks > 2*target/perTick || 3*adaptive.ticks > spark.ticks {
		t.Errorf("adaptive took %d ticks, spark %d: want adaptive within 2× the cluster's %d and 3× faster than spark",
			adaptive.ticks, spark.ticks, target/perTick)
	}
}

// A cluster with room for 100 executors: Spark's policy piles up every pod
// it may, adaptive keeps the pending pods near the running ones and backs
// off as they turn Unschedulable.
func TestSimulationFullCluster(t *testing.T) {
	const target, perTick, capacity = 1000, 100, 100
	spark := simulate(t, Options{Policy: PolicySpark, BatchSize: 20, BatchDelay: time.Second}, target, perTick, capacity, 100)
	adaptive := simulate(t, Options{Policy: PolicyAdaptive, BatchSize: 20, BatchDelay: time.Second}, target, perTick, capacity, 100)
	t.Logf("spark: %+v", spark)
	t.Logf("adaptive: %+v", adaptive)
	if spark.maxPending != target-capacity {
		t.Errorf("spark: up to %d pending pods, want %d", spark.maxPending, target-capacity)
	}
	if adaptive.maxPending > capacity {
		t.Errorf("adaptive: up to %d pending pods, want at most max(batch, running) = %d", adaptive.maxPending, capacity)
	}
}

// A small application on a cluster that admits 100 pods a tick: with a
// first round of 100 it is up in the cluster's one tick, where the batch
// of 20 takes a ramp of four rounds. On a cluster with room for 30, the
// first round is what it leaves pending (100 pods, 70 of them
// Unschedulable), and nothing more; the batch alone leaves 30.
func TestSimulationFirstRound(t *testing.T) {
	const target, perTick = 100, 100
	tests := map[string]struct {
		first, capacity int
		want            simResult
	}{
		"batch only":        {first: 0, want: simResult{ticks: 4, rounds: 4, creates: 100, maxLive: 100, maxPending: 40}},
		"first round":       {first: 100, want: simResult{ticks: 1, rounds: 1, creates: 100, maxLive: 100, maxPending: 100}},
		"room for 30 only":  {first: 100, capacity: 30, want: simResult{ticks: 20, rounds: 1, creates: 100, maxLive: 100, maxPending: 100}},
		"room for 30 batch": {first: 0, capacity: 30, want: simResult{ticks: 20, rounds: 3, creates: 60, maxLive: 60, maxPending: 30}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := Options{Policy: PolicyAdaptive, BatchSize: 20, FirstRound: tc.first, BatchDelay: time.Second}
			got := simulate(t, o, target, perTick, tc.capacity, 20)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(simResult{})); diff != "" {
				t.Errorf("simulation (-want +got):\n%s", diff)
			}
		})
	}
}
