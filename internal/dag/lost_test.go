package dag

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

// goBackend runs each launched task on its own goroutine and reports it
// alone, so one task may wait for another's result.
type goBackend struct {
	sched   *scheduler.Scheduler
	respond func(t *dataflow.Task, st *dataflow.Stage) scheduler.Status
}

func (f *goBackend) ReviveOffers() {
	go func() {
		for {
			tasks := f.sched.ResourceOffers([]scheduler.Offer{{ExecutorID: execOne, Cores: 8}})
			if len(tasks) == 0 {
				return
			}
			for _, td := range tasks {
				go func() {
					t, st, err := dataflow.DecodeTask(td.Plan, td.Payload)
					if err != nil {
						panic(err)
					}
					s := f.respond(t, st)
					s.TaskID, s.ExecutorID = td.TaskID, execOne
					f.sched.StatusUpdates([]scheduler.Status{s})
				}()
			}
		}
	}()
}

func (f *goBackend) KillTask(int64, executorid.ID, string) {}

// An executor lost after computeParents found shuffle A complete but before
// the reduce stage's tasks are built: the reduce tasks are launched with
// A's blocks missing and silently read no data from A.
func TestOutputsLostBeforeTheStageAreComputedAgain(t *testing.T) {
	var g *Graph
	var a, b int
	var mu sync.Mutex
	var once sync.Once
	var blocksOfA []int
	f := &goBackend{}
	f.respond = func(task *dataflow.Task, st *dataflow.Stage) scheduler.Status {
		if st.Output.Kind == dataflow.WriteShuffle {
			exec := execOne
			g.mu.Lock()
			if g.lost[execOne] {
				exec = execThree // executor ids are never reused
			}
			g.mu.Unlock()
			if st.Output.Shuffle == b {
				exec = execTwo
				// B's map stage ends only after A is complete and A's
				// executor is lost.
				once.Do(func() {
					g.mu.Lock()
					sa := g.shuffles[a]
					g.mu.Unlock()
					// The DAG takes A's outputs in on its own goroutine.
					if wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
						func(context.Context) (bool, error) { return len(g.missing(sa)) == 0, nil }) != nil {
						t.Errorf("A's outputs still missing after 10s")
					}
					g.ExecutorLost(execOne)
				})
			}
			ms, _ := dataflow.EncodeMapStatus(shuffle.MapStatus{MapID: task.Partition, ExecutorID: exec, Address: "x", Sizes: []int64{10}})
			return scheduler.Status{State: scheduler.Finished, Result: ms}
		}
		mu.Lock()
		blocksOfA = append(blocksOfA, len(task.Blocks[a][task.Partition]))
		mu.Unlock()
		return scheduler.Status{State: scheduler.Finished, Result: []byte{1}}
	}
	sched := newScheduler(scheduler.Options{MaxFailures: 4}, func(s *scheduler.Scheduler) scheduler.Backend {
		f.sched = s
		return f
	})
	g = New(sched, Options{MaxStageAttempts: 4})
	srcA := g.AddNode(dataflow.Node{Kind: dataflow.Range, Start: 0, End: 10, Step: 1, NumPartitions: 2}, nil)
	srcB := g.AddNode(dataflow.Node{Kind: dataflow.Range, Start: 0, End: 10, Step: 1, NumPartitions: 2}, nil)
	a = g.AddShuffle(dataflow.Shuffle{Parent: srcA, NumPartitions: 1, Partitioner: dataflow.HashPartitioner, Tagged: true})
	b = g.AddShuffle(dataflow.Shuffle{Parent: srcB, NumPartitions: 1, Partitioner: dataflow.HashPartitioner, Tagged: true, Side: 1})
	final := g.AddNode(dataflow.Node{Kind: dataflow.Shuffled, Shuffles: []int{a, b}, Reduce: dataflow.Join, NumPartitions: 1}, nil)
	if err := g.Run(context.Background(), final, dataflow.Output{Kind: dataflow.Collect}, []int{0}, func(int, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for _, n := range blocksOfA {
		if n != 2 {
			t.Errorf("a reduce task ran with %d of shuffle A's 2 map outputs (all: %v)", n, blocksOfA)
		}
	}
}

// Executors lost together (10 % of a cluster) are reported over seconds:
// each attempt of the stage that reads their outputs fails on one of them,
// and each pass of the map stage finds more outputs gone. Neither counts
// against spark.stage.maxConsecutiveAttempts (4 here): the job ends once
// the outputs are computed again, whatever the number of such rounds.
func TestManyExecutorsLostOneAfterAnother(t *testing.T) {
	const rounds = 6 // more than MaxStageAttempts
	for _, tc := range []struct {
		name string
		// lose is called in a map or result task on executor id; it
		// returns the status the task reports, or nil for the usual one.
		lose func(g *Graph, f *fakeBackend, task *dataflow.Task, st *dataflow.Stage, id executorid.ID) *scheduler.Status
	}{
		{"fetch failures from executors already reported lost", func(g *Graph, f *fakeBackend, task *dataflow.Task, st *dataflow.Stage, id executorid.ID) *scheduler.Status {
			if st.Output.Kind == dataflow.WriteShuffle || id > rounds || task.Partition != 0 {
				return nil
			}
			// The result task's fetch from the map outputs' executor
			// fails, and that executor was reported lost before.
			g.ExecutorLost(id)
			f.mu.Lock()
			f.executor = id + 1
			f.mu.Unlock()
			for sid := range task.Blocks {
				s := fetchFailed(sid)
				s.FetchFailed.ExecutorID = id
				return &s
			}
			return nil
		}},
		{"map outputs lost as soon as computed", func(g *Graph, f *fakeBackend, task *dataflow.Task, st *dataflow.Stage, id executorid.ID) *scheduler.Status {
			if st.Output.Kind != dataflow.WriteShuffle || id > rounds || task.Partition != 0 {
				return nil
			}
			// The executor that ran map 0 is lost before its output is
			// recorded: the map stage succeeded and its output is missing.
			g.ExecutorLost(id)
			f.mu.Lock()
			f.executor = id + 1
			f.mu.Unlock()
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g *Graph
			var f *fakeBackend
			g, f, final := newGraph(t, 3, func(task *dataflow.Task, st *dataflow.Stage) scheduler.Status {
				id := f.executorID()
				if s := tc.lose(g, f, task, st, id); s != nil {
					return *s
				}
				if st.Output.Kind == dataflow.WriteShuffle {
					return mapStatus(task, 0)
				}
				return scheduler.Status{State: scheduler.Finished, Result: []byte{byte(task.Partition)}}
			})
			got := collectFirstBytes(t, g, final, 0, 1)
			if len(got) != 2 {
				t.Errorf("results for %d partitions, want 2", len(got))
			}
			if id := f.executorID(); id != rounds+1 {
				t.Errorf("the job ended on executor %d, want %d: every round lost one", id, rounds+1)
			}
		})
	}
}
