package dag

import (
	"slices"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

// resetLocked drops every map output of shuffle sid, to be computed again,
// and those of the shuffles computed from it: their outputs were computed
// from data that will not be seen again.
func (g *Graph) resetLocked(sid int) {
	s := g.shuffles[sid]
	if s == nil {
		return
	}
	clear(s.outputs)
	s.gen++
	for tid, t := range g.shuffles {
		if slices.Contains(t.reads, sid) {
			g.resetLocked(tid)
		}
	}
}

// dropOutputsLocked forgets the outputs of shuffle s for which lost is
// true, and all of them, with those computed from them, when the shuffle
// is indeterminate. It returns how many outputs were lost.
func (g *Graph) dropOutputsLocked(sid int, lost func(*shuffle.MapStatus) bool) int {
	s := g.shuffles[sid]
	n := 0
	for i, o := range s.outputs {
		if o != nil && lost(o) {
			s.outputs[i] = nil
			n++
		}
	}
	if n > 0 && s.indeterminate {
		g.log.Warn("map outputs of an indeterminate shuffle lost: computing all of them and what was computed from them again",
			"shuffle", sid, "lost", n)
		g.resetLocked(sid)
	}
	return n
}

// gensLocked is the generation of every shuffle st reads.
func (g *Graph) gensLocked(st *dataflow.Stage) map[int]int {
	gens := map[int]int{}
	for _, n := range st.Nodes {
		if n.Kind == dataflow.Shuffled {
			for _, sid := range n.Shuffles {
				gens[sid] = g.shuffles[sid].gen
			}
		}
	}
	return gens
}

// unstable reports whether st reads a shuffle that may be computed again
// differently: then its results are kept until every partition has one of
// the same generation.
func (g *Graph) unstable(st *dataflow.Stage) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range st.Nodes {
		if n.Kind == dataflow.Shuffled {
			for _, sid := range n.Shuffles {
				if g.shuffles[sid].unstable {
					return true
				}
			}
		}
	}
	return false
}

// ExecutorLost forgets the map outputs an executor held: they are gone
// with it and must be computed again when needed.
func (g *Graph) ExecutorLost(id executorid.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lost[id] = true
	g.opts.Adoption.forget(id)
	lost := 0
	for sid := range g.shuffles {
		lost += g.dropOutputsLocked(sid, func(o *shuffle.MapStatus) bool { return o.ExecutorID == id })
	}
	if lost > 0 {
		g.log.Info("map outputs lost with their executor", "executor", id, "outputs", lost)
	}
}

// executorLost reports whether id was reported lost.
func (g *Graph) executorLost(id executorid.ID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lost[id]
}

func (g *Graph) lostOutput(ff *scheduler.FetchFailedError) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shuffles[ff.ShuffleID] == nil {
		return
	}
	// The executor that could not serve one block is likely gone: forget
	// everything it wrote for this shuffle, as Spark does.
	g.dropOutputsLocked(ff.ShuffleID, func(o *shuffle.MapStatus) bool { return o.ExecutorID == ff.ExecutorID })
}

// recordMapOutput keeps a map task's status, unless its executor was lost
// meanwhile or a shuffle it read was reset since its task was built (gens):
// then the output stays missing and is computed again. It runs under the
// task scheduler's lock; g.mu is never held while calling the scheduler, so
// the order is safe.
func (g *Graph) recordMapOutput(sid, p int, b []byte, gens map[int]int) {
	ms, err := dataflow.DecodeMapStatus(b)
	if err != nil {
		g.log.Error("map task returned an unreadable status; its output will be computed again", "shuffle", sid, "map", p, "err", err)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for r, gen := range gens {
		if g.shuffles[r].gen != gen {
			return
		}
	}
	if !g.lost[ms.ExecutorID] {
		g.shuffles[sid].outputs[p] = &ms
	}
}

// missing is the map outputs of s still to compute, once it took those an
// earlier attempt of the driver left (adoptLocked).
func (g *Graph) missing(s *shuffleState) []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.opts.Adoption.take(s.dep.Lineage, s.outputs, s.unstable)
	var out []int
	for i, o := range s.outputs {
		if o == nil {
			out = append(out, i)
		}
	}
	if n > 0 {
		g.log.Info("map outputs adopted from an earlier attempt of the driver", "shuffle", s.dep.ID, "outputs", n,
			"missing", len(out), "lineage", s.dep.Lineage)
		if len(out) == 0 && g.opts.StageSkipped != nil {
			g.opts.StageSkipped()
		}
	}
	return out
}

// use counts a running stage among the users of the shuffles it reads and
// writes.
func (g *Graph) use(st *dataflow.Stage, delta int) {
	g.mu.Lock()
	var gone []int
	for sid := range st.Shuffles {
		s := g.shuffles[sid]
		if s == nil {
			continue
		}
		if s.users += delta; s.users == 0 && s.forgotten {
			delete(g.shuffles, sid)
			gone = append(gone, sid)
		}
	}
	g.mu.Unlock()
	g.removeShuffles(gone)
}

// Forget drops a dataset that nothing can compute from any more, with the
// shuffles only it read: their map outputs are deleted on the executors,
// which dynamic allocation may then release. Spark's ContextCleaner does
// this when the RDD is garbage collected; so does drover's root package.
func (g *Graph) Forget(node int, shuffles []int) {
	g.mu.Lock()
	delete(g.nodes, node)
	delete(g.data, node)
	var gone []int
	for _, sid := range shuffles {
		s := g.shuffles[sid]
		switch {
		case s == nil:
		case s.users > 0:
			s.forgotten = true
		default:
			delete(g.shuffles, sid)
			gone = append(gone, sid)
		}
	}
	g.mu.Unlock()
	g.removeShuffles(gone)
}

func (g *Graph) removeShuffles(ids []int) {
	if len(ids) == 0 || g.opts.RemoveShuffles == nil {
		return
	}
	g.log.Debug("removing shuffles no dataset reads", "shuffles", ids)
	g.opts.RemoveShuffles(ids)
}

// ShuffleHolders reports the executors holding map outputs of shuffles that
// a running job reads or writes (active), and of any shuffle (held):
// dynamic allocation keeps the former.
func (g *Graph) ShuffleHolders() (active, held map[executorid.ID]bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	active, held = map[executorid.ID]bool{}, map[executorid.ID]bool{}
	for _, s := range g.shuffles {
		for _, o := range s.outputs {
			if o == nil {
				continue
			}
			held[o.ExecutorID] = true
			if s.users > 0 {
				active[o.ExecutorID] = true
			}
		}
	}
	return active, held
}
