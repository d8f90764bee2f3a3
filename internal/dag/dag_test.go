package dag

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

// fakeBackend runs every launched task at once by asking respond for its
// status, on one executor with four cores.
type fakeBackend struct {
	sched   *scheduler.Scheduler
	respond func(t *dataflow.Task, st *dataflow.Stage) scheduler.Status

	mu       sync.Mutex
	launched map[dataflow.OutputKind]int
	executor executorid.ID // execOne when zero
}

func (f *fakeBackend) executorID() executorid.ID {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.executor == 0 {
		return execOne
	}
	return f.executor
}

func (f *fakeBackend) ReviveOffers() {
	go func() {
		for {
			id := f.executorID()
			tasks := f.sched.ResourceOffers([]scheduler.Offer{{ExecutorID: id, Cores: 4}})
			if len(tasks) == 0 {
				return
			}
			var statuses []scheduler.Status
			for _, td := range tasks {
				t, st, err := dataflow.DecodeTask(td.Plan, td.Payload)
				if err != nil {
					panic(err)
				}
				f.mu.Lock()
				f.launched[st.Output.Kind]++
				f.mu.Unlock()
				s := f.respond(t, st)
				if s.State == scheduler.Finished && st.Output.Kind == dataflow.WriteShuffle {
					s.Result = mapStatus(t, id).Result
				}
				s.TaskID, s.ExecutorID = td.TaskID, id
				statuses = append(statuses, s)
			}
			f.sched.StatusUpdates(statuses)
		}
	}()
}

func (f *fakeBackend) KillTask(int64, executorid.ID, string) {}

// newGraph returns a graph with a map stage of maps partitions feeding a
// shuffle read by a result stage of two partitions.
func newGraph(t *testing.T, maps int, respond func(*dataflow.Task, *dataflow.Stage) scheduler.Status) (*Graph, *fakeBackend, int) {
	t.Helper()
	var g *Graph
	var f *fakeBackend
	sched := newScheduler(scheduler.Options{MaxFailures: 4}, func(s *scheduler.Scheduler) scheduler.Backend {
		f = &fakeBackend{sched: s, respond: respond, launched: map[dataflow.OutputKind]int{}}
		return f
	})
	g = New(sched, Options{MaxStageAttempts: 4})
	src := g.AddNode(dataflow.Node{Kind: dataflow.Range, Start: 0, End: 10, Step: 1, NumPartitions: maps}, nil)
	sid := g.AddShuffle(dataflow.Shuffle{Parent: src, NumPartitions: 2, Partitioner: dataflow.RoundRobin})
	final := g.AddNode(dataflow.Node{Kind: dataflow.Shuffled, Shuffles: []int{sid}, Reduce: dataflow.Pass, NumPartitions: 2}, nil)
	return g, f, final
}

func mapStatus(t *dataflow.Task, executor executorid.ID) scheduler.Status {
	b, err := dataflow.EncodeMapStatus(shuffle.MapStatus{MapID: t.Partition, ExecutorID: executor, Address: "127.0.0.1:1", Sizes: []int64{10, 10}})
	if err != nil {
		panic(err)
	}
	return scheduler.Status{State: scheduler.Finished, Result: b}
}

// collectFirstBytes runs a Collect of the partitions of node final and
// returns the first byte of each partition's result, failing t if the job
// fails or a partition is delivered twice.
func collectFirstBytes(t *testing.T, g *Graph, final int, partitions ...int) map[int]byte {
	t.Helper()
	got := map[int]byte{}
	err := g.Run(context.Background(), final, dataflow.Output{Kind: dataflow.Collect}, partitions, func(p int, b []byte) error {
		if _, dup := got[p]; dup {
			t.Errorf("partition %d delivered twice", p)
		}
		got[p] = b[0]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func fetchFailed(sid int) scheduler.Status {
	return scheduler.Status{State: scheduler.Failed, Err: "fetch failed",
		FetchFailed: &scheduler.FetchFailedError{ShuffleID: sid, MapID: 0, ExecutorID: execOne, Message: "connection refused"}}
}

func TestFetchFailureRecomputesLostOutputsAndRetries(t *testing.T) {
	var mu sync.Mutex
	failures := 0
	g, f, final := newGraph(t, 3, func(task *dataflow.Task, st *dataflow.Stage) scheduler.Status {
		if st.Output.Kind == dataflow.WriteShuffle {
			return mapStatus(task, 0)
		}
		mu.Lock()
		defer mu.Unlock()
		if failures == 0 {
			failures++
			for sid := range task.Blocks {
				return fetchFailed(sid)
			}
		}
		return scheduler.Status{State: scheduler.Finished, Result: []byte{byte(task.Partition)}}
	})
	got := collectFirstBytes(t, g, final, 0, 1)
	if len(got) != 2 {
		t.Errorf("results for %d partitions, want 2", len(got))
	}
	// Every map output was on the executor that failed to serve one, so the
	// whole map stage ran twice.
	if n := f.launched[dataflow.WriteShuffle]; n != 6 {
		t.Errorf("%d map tasks launched, want 6 (3, then 3 again after the fetch failure)", n)
	}
}

func TestStageFailsAfterMaxConsecutiveAttempts(t *testing.T) {
	g, f, final := newGraph(t, 2, func(task *dataflow.Task, st *dataflow.Stage) scheduler.Status {
		if st.Output.Kind == dataflow.WriteShuffle {
			return mapStatus(task, 0)
		}
		for sid := range task.Blocks {
			return fetchFailed(sid)
		}
		return scheduler.Status{State: scheduler.Failed, Err: "no blocks"}
	})
	err := g.Run(context.Background(), final, dataflow.Output{Kind: dataflow.Collect}, []int{0, 1}, func(int, []byte) error { return nil })
	if err == nil {
		t.Fatal("the job succeeded")
	}
	for _, want := range []string{"failed 4 consecutive attempts", "connection refused", "executor 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if n := f.launched[dataflow.Collect]; n < 4 {
		t.Errorf("%d result tasks launched, want at least one per attempt (4)", n)
	}
}

func TestExecutorLostForgetsItsOutputs(t *testing.T) {
	g, f, final := newGraph(t, 2, func(task *dataflow.Task, st *dataflow.Stage) scheduler.Status {
		if st.Output.Kind == dataflow.WriteShuffle {
			return mapStatus(task, 0)
		}
		return scheduler.Status{State: scheduler.Finished, Result: []byte{1}}
	})
	run := func() {
		t.Helper()
		if err := g.Run(context.Background(), final, dataflow.Output{Kind: dataflow.Collect}, []int{0, 1}, func(int, []byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	run()
	s := g.shuffles[g.Node(final).Shuffles[0]]
	if missing := g.missing(s); len(missing) != 0 {
		t.Fatalf("missing outputs after the job: %v", missing)
	}
	g.ExecutorLost(execOne)
	f.mu.Lock()
	f.executor = execTwo // executor ids are never reused
	f.mu.Unlock()
	if missing := g.missing(s); len(missing) != 2 {
		t.Fatalf("missing outputs after losing their executor: %v, want both", missing)
	}
	run() // recomputes them
	if missing := g.missing(s); len(missing) != 0 {
		t.Fatalf("missing outputs after the second job: %v", missing)
	}
}

func TestForgetRemovesShuffles(t *testing.T) {
	for _, duringJob := range []bool{false, true} {
		name := "after the job"
		if duringJob {
			name = "while a job reads it"
		}
		t.Run(name, func(t *testing.T) {
			reading := make(chan struct{})
			release := make(chan struct{})
			var once sync.Once
			g, _, final := newGraph(t, 3, func(task *dataflow.Task, st *dataflow.Stage) scheduler.Status {
				if st.Output.Kind == dataflow.WriteShuffle {
					return mapStatus(task, 0)
				}
				if duringJob {
					once.Do(func() { close(reading) })
					<-release
				}
				return scheduler.Status{State: scheduler.Finished, Result: []byte{0}}
			})
			var mu sync.Mutex
			var removed []int
			g.opts.RemoveShuffles = func(ids []int) {
				mu.Lock()
				defer mu.Unlock()
				removed = append(removed, ids...)
			}
			removedNow := func() []int {
				mu.Lock()
				defer mu.Unlock()
				return append([]int(nil), removed...)
			}
			sid := g.Node(final).Shuffles[0]
			done := make(chan error, 1)
			go func() {
				done <- g.Run(context.Background(), final, dataflow.Output{Kind: dataflow.Collect}, []int{0, 1},
					func(int, []byte) error { return nil })
			}()
			if duringJob {
				<-reading
				g.Forget(final, []int{sid})
				if got := removedNow(); len(got) != 0 {
					t.Errorf("removed %v while a stage read it", got)
				}
				if _, held := g.ShuffleHolders(); !held[execOne] {
					t.Error("the map outputs were forgotten while a stage read them")
				}
				close(release)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !duringJob {
				if _, held := g.ShuffleHolders(); !held[execOne] {
					t.Fatal("no map outputs after the job")
				}
				g.Forget(final, []int{sid})
			}
			if diff := cmp.Diff([]int{sid}, removedNow()); diff != "" {
				t.Errorf("removed shuffles (-want +got):\n%s", diff)
			}
			if _, held := g.ShuffleHolders(); len(held) != 0 {
				t.Errorf("executors still hold forgotten map outputs: %v", held)
			}
			if g.Node(final) != nil {
				t.Error("the forgotten node is still in the graph")
			}
		})
	}
}

// Executors of the tests; ids are never reused.
const (
	execOne executorid.ID = iota + 1
	execTwo
	execThree
)

// newScheduler builds a scheduler with opts on the backend build makes of
// it; a nil build makes one that never launches.
func newScheduler(opts scheduler.Options, build func(*scheduler.Scheduler) scheduler.Backend) *scheduler.Scheduler {
	var b func(*scheduler.Scheduler) (scheduler.Backend, error)
	if build != nil {
		b = func(s *scheduler.Scheduler) (scheduler.Backend, error) { return build(s), nil }
	}
	s, err := scheduler.New(opts, b)
	if err != nil {
		panic(err)
	}
	return s
}
