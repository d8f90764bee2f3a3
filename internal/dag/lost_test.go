package dag

import (
	"context"
	"sync"
	"testing"
	"time"

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
	sched := scheduler.New(scheduler.Options{MaxFailures: 4})
	var a, b int
	var mu sync.Mutex
	var once sync.Once
	var blocksOfA []int
	f := &goBackend{sched: sched}
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
					for len(g.missing(sa)) != 0 {
						time.Sleep(time.Millisecond)
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
	sched.SetBackend(f)
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
