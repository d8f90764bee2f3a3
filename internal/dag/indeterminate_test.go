package dag

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

// chain adds to g: a range of 4 partitions → hash shuffle s1 → round-robin
// shuffle s2 (indeterminate: its input comes from s1) → hash shuffle s3 →
// final, each shuffle read into 2 partitions; and a round-robin shuffle of
// the range itself (determinate: its input order is fixed).
func chain(g *Graph) (s1, s2, s3, rr, final int) {
	src := g.AddNode(dataflow.Node{Kind: dataflow.Range, Start: 0, End: 100, Step: 1, NumPartitions: 4}, nil)
	read := func(sid int) int {
		return g.AddNode(dataflow.Node{Kind: dataflow.Shuffled, Shuffles: []int{sid}, Reduce: dataflow.Pass, NumPartitions: 2}, nil)
	}
	s1 = g.AddShuffle(dataflow.Shuffle{Parent: src, NumPartitions: 2, Partitioner: dataflow.HashPartitioner})
	s2 = g.AddShuffle(dataflow.Shuffle{Parent: read(s1), NumPartitions: 2, Partitioner: dataflow.RoundRobin})
	s3 = g.AddShuffle(dataflow.Shuffle{Parent: read(s2), NumPartitions: 2, Partitioner: dataflow.HashPartitioner})
	rr = g.AddShuffle(dataflow.Shuffle{Parent: src, NumPartitions: 2, Partitioner: dataflow.RoundRobin})
	return s1, s2, s3, rr, read(s3)
}

func TestIndeterminateShuffleLosesAllItsOutputs(t *testing.T) {
	g := New(newScheduler(scheduler.Options{}, nil), Options{})
	s1, s2, s3, rr, _ := chain(g)
	type flags struct{ Indeterminate, Unstable bool }
	got := map[int]flags{}
	for _, sid := range []int{s1, s2, s3, rr} {
		got[sid] = flags{g.shuffles[sid].indeterminate, g.shuffles[sid].unstable}
	}
	want := map[int]flags{s1: {false, false}, s2: {true, true}, s3: {false, true}, rr: {false, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("shuffle flags (-want +got):\n%s", diff)
	}
	// Every shuffle complete: map 0 on e1, the others on e2.
	for _, s := range g.shuffles {
		for m := range s.outputs {
			exec := execTwo
			if m == 0 {
				exec = execOne
			}
			s.outputs[m] = &shuffle.MapStatus{MapID: m, ExecutorID: exec}
		}
	}
	g.ExecutorLost(execOne)
	missing := map[int][]int{}
	gens := map[int]int{}
	for sid, s := range g.shuffles {
		missing[sid] = g.missing(s)
		gens[sid] = s.gen
	}
	// s1 and rr lose the output e1 held; s2 loses all, and so does s3,
	// computed from s2.
	wantMissing := map[int][]int{s1: {0}, s2: {0, 1}, s3: {0, 1}, rr: {0}}
	if diff := cmp.Diff(wantMissing, missing); diff != "" {
		t.Errorf("missing outputs after e1 was lost (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int]int{s1: 0, s2: 1, s3: 1, rr: 0}, gens); diff != "" {
		t.Errorf("generations (-want +got):\n%s", diff)
	}
}

// A fetch failure on an indeterminate shuffle while its reading stage has
// finished some partitions: the whole shuffle is computed again and every
// partition of the stage runs again on the new data; no result of the old
// data is delivered.
func TestIndeterminateShuffleRerunsItsReaders(t *testing.T) {
	var mu sync.Mutex
	mapRuns := map[int]int{} // shuffle → map tasks run
	failed := false
	var g *Graph
	var s2 int
	g, f, _ := newGraph(t, 2, func(task *dataflow.Task, st *dataflow.Stage) scheduler.Status {
		mu.Lock()
		defer mu.Unlock()
		if st.Output.Kind == dataflow.WriteShuffle {
			mapRuns[st.Output.Shuffle]++
			return mapStatus(task, 0)
		}
		if task.Partition == 1 && !failed {
			failed = true
			return fetchFailed(s2)
		}
		// The result tells which generation of s2's data it read.
		return scheduler.Status{State: scheduler.Finished, Result: []byte{byte(mapRuns[s2] / 2)}}
	})
	_, s2, _, _, final := chain(g)
	got := collectFirstBytes(t, g, final, 0, 1)
	if diff := cmp.Diff(map[int]byte{0: 2, 1: 2}, got); diff != "" {
		t.Errorf("results by the generation of s2 they read (-want +got):\n%s", diff)
	}
	if mapRuns[s2] != 4 {
		t.Errorf("s2's 2 map tasks ran %d times in all, want 4 (both again)", mapRuns[s2])
	}
	if n := f.launched[dataflow.Collect]; n != 4 {
		t.Errorf("%d result tasks, want 4 (2, then both again)", n)
	}
}
