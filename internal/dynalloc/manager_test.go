package dynalloc

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeTasks struct {
	pending, running int
	byExec           map[executorid.ID]int
}

func (f *fakeTasks) PendingTasks() int                        { return f.pending }
func (f *fakeTasks) RunningTasks() int                        { return f.running }
func (f *fakeTasks) RunningByExecutor() map[executorid.ID]int { return f.byExec }

type fakeClient struct {
	mu       sync.Mutex
	requests []int
	killed   []executorid.ID
}

func (f *fakeClient) RequestTotalExecutors(n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, n)
	return nil
}

func (f *fakeClient) KillExecutors(ids []executorid.ID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, ids...)
	return nil
}

func newManager(decommission bool) (*Manager, *fakeTasks, *fakeClient, *clocktesting.FakeClock, *[]executorid.ID) {
	clk := clocktesting.NewFakeClock(t0)
	tasks := &fakeTasks{byExec: map[executorid.ID]int{}}
	client := &fakeClient{}
	execs := []executorid.ID{1, 2}
	cfg := testConfig()
	cfg.IdleTimeout = 10 * time.Second
	m := &Manager{Config: cfg, Tasks: tasks, Client: client, Clock: clk, Decommission: decommission,
		Executors: func() []executorid.ID { return execs }, Metrics: &Metrics{}, Logger: slog.New(slog.DiscardHandler)}
	m.state = NewState(cfg)
	m.idleSince, m.removing, m.killed = map[executorid.ID]time.Time{}, map[executorid.ID]bool{}, map[executorid.ID]bool{}
	return m, tasks, client, clk, &execs
}

func TestManagerRemovesIdleExecutorsAndResendsTheTarget(t *testing.T) {
	m, tasks, client, clk, _ := newManager(false)
	removed := 0
	m.Metrics.IdleRemoved = func() { removed++ }
	var excluded []executorid.ID
	m.Exclude = func(id executorid.ID) { excluded = append(excluded, id) }
	tasks.running, tasks.byExec = 1, map[executorid.ID]int{2: 1}
	m.tick(clk.Now()) // "1" idle from now, "2" busy
	clk.Step(11 * time.Second)
	m.tick(clk.Now())
	if diff := cmp.Diff([]executorid.ID{1}, client.killed); diff != "" {
		t.Errorf("killed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]executorid.ID{1}, excluded); diff != "" {
		t.Errorf("excluded (-want +got):\n%s", diff)
	}
	// Without a backlog the target (0) does not change; it is re-sent after
	// the kill, which may have lowered the cluster manager's own count.
	if diff := cmp.Diff([]int{0}, client.requests); diff != "" {
		t.Errorf("target requests (-want +got):\n%s", diff)
	}
	if removed != 1 {
		t.Errorf("removed metric = %v, want 1", removed)
	}
}

func TestDecommissionWaitsForRunningTasks(t *testing.T) {
	m, tasks, client, clk, _ := newManager(true)
	m.tick(clk.Now())
	clk.Step(11 * time.Second)
	// Both idle past the timeout: chosen. Then "2" gets a task before it
	// is killed (launched just before it was excluded).
	tasks.running, tasks.byExec = 1, map[executorid.ID]int{2: 1}
	m.state.Target = 0
	m.remove([]executorid.ID{1, 2}, tasks.byExec)
	if diff := cmp.Diff([]executorid.ID{1}, client.killed); diff != "" {
		t.Errorf("killed at once (-want +got):\n%s", diff)
	}
	tasks.running, tasks.byExec = 0, map[executorid.ID]int{}
	m.remove(nil, tasks.byExec)
	if diff := cmp.Diff([]executorid.ID{1, 2}, client.killed); diff != "" {
		t.Errorf("killed once its task ended (-want +got):\n%s", diff)
	}
}
