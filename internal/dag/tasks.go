package dag

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

// errInputsLost means a shuffle the stage reads lost map outputs after they
// were computed and before the stage's tasks were built.
var errInputsLost = errors.New("map outputs lost before the stage started")

type result struct {
	partition int
	result    []byte
}

// runTasks runs one attempt of a stage over the partitions and returns the
// results of those that succeeded, even when the attempt failed, and the
// generations of the shuffles its tasks read.
func (g *Graph) runTasks(ctx context.Context, st *dataflow.Stage, partitions []int) ([]result, map[int]int, error) {
	stageBytes, err := dataflow.EncodeStage(st)
	if err != nil {
		return nil, nil, err
	}
	tasks := make([]scheduler.TaskSpec, len(partitions))
	g.mu.Lock()
	for _, n := range st.Nodes {
		if n.Kind != dataflow.Shuffled {
			continue
		}
		for _, sid := range n.Shuffles {
			if slices.Contains(g.shuffles[sid].outputs, nil) {
				g.mu.Unlock()
				return nil, nil, errInputsLost
			}
		}
	}
	gens := g.gensLocked(st)
	for i, p := range partitions {
		t := &dataflow.Task{Partition: p, MemoryBytes: g.opts.MemoryBytes, MaxInFlight: g.opts.MaxInFlight}
		g.inputsLocked(st, st.Final, p, t)
		b, err := dataflow.EncodeTask(t)
		if err != nil {
			g.mu.Unlock()
			return nil, nil, err
		}
		tasks[i] = scheduler.TaskSpec{Partition: p, Payload: b}
	}
	name := stageName(st)
	g.mu.Unlock()

	var mu sync.Mutex
	var done []result
	err = g.sched.Run(ctx, scheduler.TaskSetSpec{
		JobID: events.JobOf(ctx), StageID: st.ID, StageAttempt: st.Attempt, Func: dataflow.TaskFunc, Plan: stageBytes, Tasks: tasks, Name: name,
		OnSuccess: func(p int, r []byte) {
			if st.Output.Kind == dataflow.WriteShuffle {
				// Recorded at once, not when the stage ends: dynamic
				// allocation must see the executor holds shuffle data, and
				// a loss of the executor before then must clear it.
				g.recordMapOutput(st.Output.Shuffle, p, r, gens)
			}
			mu.Lock()
			done = append(done, result{p, r})
			mu.Unlock()
		},
	})
	mu.Lock()
	defer mu.Unlock()
	return done, gens, err
}

// inputsLocked adds to t what partition p of node id reads: Parallelize
// records, text file splits and shuffle blocks.
func (g *Graph) inputsLocked(st *dataflow.Stage, id, p int, t *dataflow.Task) {
	n := st.Nodes[id]
	switch n.Kind {
	case dataflow.Parallelize:
		if t.Data == nil {
			t.Data = map[int][]byte{}
		}
		t.Data[p] = g.data[id][p]
	case dataflow.TextFile:
		if t.Splits == nil {
			t.Splits = map[int]map[int]dataflow.FileSplit{}
		}
		if t.Splits[id] == nil {
			t.Splits[id] = map[int]dataflow.FileSplit{}
		}
		t.Splits[id][p] = n.Splits[p]
	case dataflow.Func:
		g.inputsLocked(st, n.Parent, p, t)
	case dataflow.Coalesce:
		for _, q := range n.Groups[p] {
			g.inputsLocked(st, n.Parent, q, t)
		}
	case dataflow.Shuffled:
		if t.Blocks == nil {
			t.Blocks = map[int]map[int][]shuffle.BlockRef{}
		}
		for _, sid := range n.Shuffles {
			if t.Blocks[sid] == nil {
				t.Blocks[sid] = map[int][]shuffle.BlockRef{}
			}
			var refs []shuffle.BlockRef
			for m, o := range g.shuffles[sid].outputs {
				if o == nil || o.Sizes[p] == 0 {
					continue
				}
				ref := shuffle.BlockRef{MapID: m, TaskID: o.TaskID, ExecutorID: o.ExecutorID, Address: o.Address, Size: o.Sizes[p]}
				if o.ShuffleID != sid {
					ref.ShuffleID = o.ShuffleID // adopted from an earlier attempt
				}
				refs = append(refs, ref)
			}
			t.Blocks[sid][p] = refs
		}
	}
}

// stageName describes a stage for the UI by its last dataset and what its
// tasks do with the records: "flatMap main.split → shuffle 1".
func stageName(st *dataflow.Stage) string {
	n := st.Nodes[st.Final]
	var name string
	switch n.Kind {
	case dataflow.Func:
		name = string(n.Mode) + " " + n.Fn
	case dataflow.Parallelize:
		name = "parallelize"
	case dataflow.Range:
		name = "range"
	case dataflow.TextFile:
		name = "read"
		if len(n.Splits) > 0 {
			name += " " + n.Splits[0].Path
		}
	case dataflow.Coalesce:
		name = "coalesce"
	case dataflow.Shuffled:
		name = fmt.Sprintf("read shuffle %v", n.Shuffles)
	}
	switch st.Output.Kind {
	case dataflow.WriteShuffle:
		return fmt.Sprintf("%s → shuffle %d", name, st.Output.Shuffle)
	case dataflow.Collect:
		return name + " → collect"
	case dataflow.Count:
		return name + " → count"
	case dataflow.ReduceAll:
		return name + " → reduce " + st.Output.Fn
	case dataflow.Foreach:
		return name + " → foreach " + st.Output.Fn
	case dataflow.SaveText:
		return name + " → save"
	case dataflow.SampleKeys:
		return name + " → sample keys"
	}
	return name
}
