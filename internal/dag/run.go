package dag

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/scheduler"
)

// maxInputRecomputes bounds, per allowed stage attempt, how often a stage
// may compute its lost or stale inputs again without a failed attempt of
// its own: inputs are lost through no fault of the stage (an executor that
// held map outputs died), so they do not count as attempts, but a cluster
// that keeps losing them must still end the job.
const maxInputRecomputes = 10

// Run computes the given partitions of node final into out and calls
// onResult with each partition's task result, once per partition, after
// its stage attempt ended (after the stage, when it reads an indeterminate
// shuffle). Parent shuffles are computed first when their
// outputs are missing; a fetch failure recomputes the lost map outputs and
// retries the partitions still missing, up to spark.stage.maxConsecutiveAttempts.
func (g *Graph) Run(ctx context.Context, final int, out dataflow.Output, partitions []int, onResult func(partition int, result []byte) error) error {
	st, err := g.stage(final, out)
	if err != nil {
		return err
	}
	g.use(st, 1)
	defer g.use(st, -1)
	pending := slices.Clone(partitions)
	// A stage that reads an unstable shuffle holds its results until every
	// partition has one computed from the same generation of its inputs:
	// after an indeterminate shuffle was computed again, the results of the
	// old one would duplicate or miss records.
	unstable := g.unstable(st)
	var held map[int][]byte
	var heldGens map[int]int
	for attempt, lostInputs := 0, 0; ; attempt++ {
		st.Attempt = attempt
		if err := g.computeParents(ctx, st); err != nil {
			return err
		}
		if st.ID == 0 {
			// Numbered once its parents ran, so stages are numbered in the
			// order they run, as in Spark.
			st.ID = g.NewStageID()
		}
		done, gens, err := g.runTasks(ctx, st, pending)
		if errors.Is(err, errInputsLost) {
			// Outputs computed by computeParents were lost before the tasks
			// were built: compute them again, as Spark does on a missing
			// map output, without counting a failed attempt.
			if lostInputs++; lostInputs > maxInputRecomputes*g.opts.MaxStageAttempts {
				return fmt.Errorf("stage %d: %w %d times in a row", st.ID, err, lostInputs)
			}
			attempt--
			continue
		}
		if unstable {
			if !maps.Equal(gens, heldGens) {
				if len(held) > 0 {
					g.log.Warn("the stage's input was computed again: running all its partitions again",
						"stage", st.ID, "discarded", len(held))
				}
				held, heldGens = map[int][]byte{}, gens
			}
			for _, r := range done {
				held[r.partition] = r.result
			}
			pending = slices.DeleteFunc(slices.Clone(partitions), func(p int) bool { _, ok := held[p]; return ok })
			if len(pending) == 0 {
				for _, p := range partitions {
					if herr := onResult(p, held[p]); herr != nil {
						return herr
					}
				}
				return nil
			}
			if err == nil {
				// The held results were of an older generation: run the
				// partitions they covered again, without counting a failure.
				if lostInputs++; lostInputs > maxInputRecomputes*g.opts.MaxStageAttempts {
					return fmt.Errorf("stage %d: its input was computed again %d times in a row", st.ID, lostInputs)
				}
				attempt--
				continue
			}
		} else {
			for _, r := range done {
				if herr := onResult(r.partition, r.result); herr != nil {
					return herr
				}
			}
			pending = slices.DeleteFunc(pending, func(p int) bool {
				return slices.ContainsFunc(done, func(r result) bool { return r.partition == p })
			})
			if err == nil {
				return nil
			}
		}
		var ff *scheduler.FetchFailedError
		if !errors.As(err, &ff) {
			return err
		}
		g.lostOutput(ff)
		if g.executorLost(ff.ExecutorID) {
			// The block's executor was already reported lost: its outputs
			// are inputs lost through no fault of this stage, as above. When
			// many executors go at once, each attempt meets one of them (the
			// attempt ends at its first fetch failure), and counting those
			// would fail the job on the fourth while the rest are recomputed.
			if lostInputs++; lostInputs > maxInputRecomputes*g.opts.MaxStageAttempts {
				return fmt.Errorf("stage %d: map outputs lost with their executors %d times in a row; last: %w", st.ID, lostInputs, err)
			}
			g.log.Info("fetch failed from an executor that was lost; recomputing its map outputs", "stage", st.ID,
				"shuffle", ff.ShuffleID, "executor", ff.ExecutorID)
			attempt--
			continue
		}
		if attempt+1 >= g.opts.MaxStageAttempts {
			return fmt.Errorf("stage %d failed %d consecutive attempts; last: %w", st.ID, attempt+1, err)
		}
		g.log.Warn("fetch failed; recomputing the lost map outputs", "stage", st.ID, "shuffle", ff.ShuffleID,
			"map", ff.MapID, "executor", ff.ExecutorID, "err", ff.Message)
	}
}

// stage collects the nodes computed in one task: the final node and its
// narrow ancestors, up to sources and shuffle reads.
func (g *Graph) stage(final int, out dataflow.Output) (*dataflow.Stage, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := &dataflow.Stage{Nodes: map[int]*dataflow.Node{}, Shuffles: map[int]*dataflow.Shuffle{},
		Final: final, Output: out}
	var walk func(id int) error
	walk = func(id int) error {
		n := g.nodes[id]
		if n == nil {
			return fmt.Errorf("unknown dataset %d", id)
		}
		st.Nodes[id] = n
		switch n.Kind {
		case dataflow.Func, dataflow.Coalesce:
			return walk(n.Parent)
		case dataflow.Shuffled:
			for _, sid := range n.Shuffles {
				st.Shuffles[sid] = g.shuffles[sid].dep
			}
		}
		return nil
	}
	if out.Kind == dataflow.WriteShuffle {
		st.Shuffles[out.Shuffle] = g.shuffles[out.Shuffle].dep
	}
	return st, walk(final)
}

// computeParents makes sure every shuffle the stage reads has all its map
// outputs, computing the missing ones (independent shuffles concurrently).
func (g *Graph) computeParents(ctx context.Context, st *dataflow.Stage) error {
	var reads []int
	for _, n := range st.Nodes {
		if n.Kind == dataflow.Shuffled {
			reads = append(reads, n.Shuffles...)
		}
	}
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	for i, sid := range reads {
		wg.Go(func() { errs[i] = g.computeShuffle(ctx, sid) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (g *Graph) computeShuffle(ctx context.Context, sid int) error {
	g.mu.Lock()
	s := g.shuffles[sid]
	g.mu.Unlock()
	s.compute.Lock()
	defer s.compute.Unlock()
	// A pass whose map stage succeeded and still left outputs missing lost
	// them with their executors after they were computed: as lost inputs,
	// it is bounded by maxInputRecomputes per allowed attempt, not by the
	// attempts (a failed map stage returns its error at once). Executors
	// lost together are reported over seconds, each pass finding more.
	for pass := 0; ; pass++ {
		missing := g.missing(s)
		if len(missing) == 0 {
			return nil
		}
		if pass >= maxInputRecomputes*g.opts.MaxStageAttempts {
			return fmt.Errorf("shuffle %d: map outputs keep getting lost (%d passes)", sid, pass)
		}
		// Map outputs are recorded as their tasks succeed (recordMapOutput).
		err := g.Run(ctx, s.dep.Parent, dataflow.Output{Kind: dataflow.WriteShuffle, Shuffle: sid}, missing,
			func(int, []byte) error { return nil })
		if err != nil {
			return err
		}
	}
}

// NewStageID numbers a stage: the graph's, or one a caller runs on the
// task scheduler itself.
func (g *Graph) NewStageID() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextStage++
	return g.nextStage
}
