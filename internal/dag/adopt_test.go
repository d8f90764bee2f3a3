package dag

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

// restarted is a graph with lineage on, as a restarted driver builds it,
// whose fake executor counts the map tasks run per shuffle and the block
// refs the result tasks read.
type restarted struct {
	g        *Graph
	f        *fakeBackend
	adoption *Adoption
	skipped  atomic.Int32

	mu      sync.Mutex
	mapRuns map[int]int
	refs    []shuffle.BlockRef
}

func newRestarted(t *testing.T) *restarted {
	t.Helper()
	r := &restarted{mapRuns: map[int]int{}}
	sched := newScheduler(scheduler.Options{MaxFailures: 4}, func(sched *scheduler.Scheduler) scheduler.Backend {
		r.f = &fakeBackend{sched: sched, launched: map[dataflow.OutputKind]int{}, respond: func(task *dataflow.Task, st *dataflow.Stage) scheduler.Status {
			r.mu.Lock()
			defer r.mu.Unlock()
			if st.Output.Kind == dataflow.WriteShuffle {
				r.mapRuns[st.Output.Shuffle]++
				return mapStatus(task, 0)
			}
			for _, parts := range task.Blocks {
				r.refs = append(r.refs, parts[task.Partition]...)
			}
			return scheduler.Status{State: scheduler.Finished, Result: []byte{1}}
		}}
		return r.f
	})
	r.adoption = NewAdoption()
	r.g = New(sched, Options{MaxStageAttempts: 4, Lineage: true, Adoption: r.adoption, StageSkipped: func() { r.skipped.Add(1) }})
	return r
}

// held is what an executor of an earlier attempt names: maps of the
// shuffle of lineage, written under shuffle id written.
func held(lineage string, written int, maps ...int) []shuffle.HeldOutput {
	var out []shuffle.HeldOutput
	for _, m := range maps {
		out = append(out, shuffle.HeldOutput{Lineage: lineage, Status: shuffle.MapStatus{ShuffleID: written, MapID: m,
			TaskID: int64(100 + m), Sizes: []int64{10, 10}}})
	}
	return out
}

func TestRestartedGraphAdoptsOutputsOfTheSameLineage(t *testing.T) {
	// The earlier attempt's lineage of each shuffle, from the same program.
	first := New(newScheduler(scheduler.Options{}, nil), Options{Lineage: true})
	s1, s2, s3, _, _ := chain(first)
	lin := func(sid int) string { return first.shuffles[sid].dep.Lineage }
	// A program that reads other input: its shuffles have other lineages.
	other := New(newScheduler(scheduler.Options{}, nil), Options{Lineage: true})
	oSrc := other.AddNode(dataflow.Node{Kind: dataflow.Range, Start: 0, End: 99, Step: 1, NumPartitions: 4}, nil)
	o3 := other.AddShuffle(dataflow.Shuffle{Parent: oSrc, NumPartitions: 2, Partitioner: dataflow.HashPartitioner})
	for _, tc := range []struct {
		name string
		// adopt returns what executor one names, by the earlier attempt's
		// ids; readS1 runs a job reading s1 only, else one reading s3.
		adopt    []shuffle.HeldOutput
		lostExec bool
		readS1   bool
		// wantRuns are the map tasks run, by shuffle: s1, s2, s3.
		wantRuns [3]int
		// wantOldRefs counts the blocks read from adopted outputs.
		wantOldRefs int
		// wantSkipped counts the map stages that took all their outputs.
		wantSkipped int32
	}{
		// Two result partitions each read both maps.
		{name: "whole last shuffle adopted: no map stage runs", adopt: held(lin(s3), s3, 0, 1), wantOldRefs: 4, wantSkipped: 1},
		{name: "an indeterminate shuffle adopted whole: its input is not computed", adopt: held(lin(s2), s2, 0, 1),
			wantRuns: [3]int{0, 0, 2}, wantSkipped: 1},
		{name: "nothing adopted: every map stage runs", wantRuns: [3]int{4, 2, 2}},
		{name: "a determinate shuffle takes what lives, computes the rest", adopt: held(lin(s1), s1, 0, 3), readS1: true,
			wantRuns: [3]int{2, 0, 0}, wantOldRefs: 4},
		{name: "a shuffle computed from an indeterminate one takes all or nothing", adopt: held(lin(s3), s3, 1),
			wantRuns: [3]int{4, 2, 2}},
		{name: "another lineage is never adopted", adopt: held(other.shuffles[o3].dep.Lineage, s3, 0, 1), wantRuns: [3]int{4, 2, 2}},
		{name: "outputs of a lost executor are not adopted", adopt: held(lin(s3), s3, 0, 1), lostExec: true,
			wantRuns: [3]int{4, 2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRestarted(t)
			// The restarted program numbers its datasets differently.
			r.g.AddNode(dataflow.Node{Kind: dataflow.Range, Start: 0, End: 1, Step: 1, NumPartitions: 1}, nil)
			n1, n2, n3, _, final := chain(r.g)
			if n3 == s3 {
				t.Fatal("the restarted graph's ids should differ from the first's")
			}
			r.adoption.Add(execOne, "127.0.0.1:9", tc.adopt)
			if tc.lostExec {
				r.g.ExecutorLost(execOne)
				r.f.mu.Lock()
				r.f.executor = execTwo
				r.f.mu.Unlock()
			}
			if tc.readS1 {
				final = r.g.AddNode(dataflow.Node{Kind: dataflow.Shuffled, Shuffles: []int{n1}, Reduce: dataflow.Pass, NumPartitions: 2}, nil)
			}
			err := r.g.Run(context.Background(), final, dataflow.Output{Kind: dataflow.Collect}, []int{0, 1}, func(int, []byte) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if diff := cmp.Diff(tc.wantRuns, [3]int{r.mapRuns[n1], r.mapRuns[n2], r.mapRuns[n3]}); diff != "" {
				t.Errorf("map tasks run for s1, s2, s3 (-want +got):\n%s", diff)
			}
			old := 0
			for _, ref := range r.refs {
				if ref.ShuffleID != 0 {
					if want := tc.adopt[0].Status.ShuffleID; ref.ShuffleID != want || ref.Address != "127.0.0.1:9" {
						t.Errorf("adopted block read as shuffle %d at %s, want %d at 127.0.0.1:9", ref.ShuffleID, ref.Address, want)
					}
					old++
				}
			}
			if got := r.skipped.Load(); got != tc.wantSkipped {
				t.Errorf("%d map stages skipped, want %d", got, tc.wantSkipped)
			}
			if old != tc.wantOldRefs {
				t.Errorf("%d blocks read from adopted outputs, want %d", old, tc.wantOldRefs)
			}
		})
	}
}
