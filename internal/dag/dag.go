package dag

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

// maxInputRecomputes bounds, per allowed stage attempt, how often a stage
// may compute its lost or stale inputs again without a failed attempt of
// its own: inputs are lost through no fault of the stage (an executor that
// held map outputs died), so they do not count as attempts, but a cluster
// that keeps losing them must still end the job.
const maxInputRecomputes = 10

// Options configures a Graph.
type Options struct {
	// MaxStageAttempts is spark.stage.maxConsecutiveAttempts; a stage's
	// inputs may be recomputed maxInputRecomputes times as often.
	MaxStageAttempts int
	// MemoryBytes is each task's budget for aggregation and sort buffers.
	MemoryBytes int64
	// MaxInFlight is spark.reducer.maxSizeInFlight.
	MaxInFlight int64
	// RemoveShuffles deletes the executors' map outputs of shuffles the
	// graph forgot; nil keeps them until the executors exit.
	RemoveShuffles func(ids []int)
	Logger         *slog.Logger
}

// Graph holds an application's datasets and shuffles, the map outputs of
// the shuffles computed so far, and runs jobs on them stage by stage.
type Graph struct {
	sched *scheduler.Scheduler
	opts  Options
	log   *slog.Logger

	mu        sync.Mutex
	nodes     map[int]*dataflow.Node
	data      map[int][][]byte // Parallelize node → framed records per partition
	shuffles  map[int]*shuffleState
	nextID    int
	nextStage int
	// lost are the executors reported lost: their map outputs are gone,
	// also those whose tasks report success afterwards.
	lost    map[executorid.ID]bool
	nextJob int64
}

// shuffleState is a shuffle and the map outputs that exist.
type shuffleState struct {
	dep     *dataflow.Shuffle
	compute sync.Mutex           // one computation of the map stage at a time
	outputs []*shuffle.MapStatus // guarded by Graph.mu; nil when missing
	// users counts the running stages that read or write the shuffle;
	// guarded by Graph.mu.
	users int
	// forgotten is set when no dataset needs the shuffle any more but a
	// stage still used it: the last user removes it.
	forgotten bool
	// reads are the shuffles its map stage reads.
	reads []int
	// indeterminate is set when a map task's output depends on the order
	// its input arrives in, not only on the input: a round-robin shuffle
	// (Repartition) of records that come from another shuffle, whose
	// fetches complete in any order. A recomputed map output would not
	// fit with the others, so losing one recomputes them all (SPARK-23207).
	indeterminate bool
	// unstable is set when it or a shuffle upstream is indeterminate: its
	// readers must not mix data of two generations.
	unstable bool
	// gen counts the times every output was dropped to be computed again;
	// guarded by Graph.mu.
	gen int
}

// New returns an empty graph running its tasks on sched.
func New(sched *scheduler.Scheduler, opts Options) *Graph {
	if opts.MaxStageAttempts < 1 {
		opts.MaxStageAttempts = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Graph{sched: sched, opts: opts, log: opts.Logger, nodes: map[int]*dataflow.Node{},
		data: map[int][][]byte{}, shuffles: map[int]*shuffleState{}, lost: map[executorid.ID]bool{}}
}

// AddNode adds a dataset and returns its id; data holds a Parallelize
// node's records.
func (g *Graph) AddNode(n dataflow.Node, data [][]byte) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextID++
	n.ID = g.nextID
	g.nodes[n.ID] = &n
	if data != nil {
		g.data[n.ID] = data
	}
	return n.ID
}

// AddShuffle adds a shuffle dependency and returns its id.
func (g *Graph) AddShuffle(s dataflow.Shuffle) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextID++
	s.ID = g.nextID
	st := &shuffleState{dep: &s, outputs: make([]*shuffle.MapStatus, g.nodes[s.Parent].NumPartitions)}
	st.reads = g.shuffleReadsLocked(s.Parent)
	st.indeterminate = s.Partitioner == dataflow.RoundRobin && len(st.reads) > 0
	st.unstable = st.indeterminate
	for _, r := range st.reads {
		if rs := g.shuffles[r]; rs != nil && rs.unstable {
			st.unstable = true
		}
	}
	g.shuffles[s.ID] = st
	return s.ID
}

// shuffleReadsLocked is the shuffles read in the stage that computes node
// id: those of the shuffled nodes up its chain of narrow parents.
func (g *Graph) shuffleReadsLocked(id int) []int {
	n := g.nodes[id]
	switch {
	case n == nil:
		return nil
	case n.Kind == dataflow.Shuffled:
		return slices.Clone(n.Shuffles)
	case n.Kind == dataflow.Func || n.Kind == dataflow.Coalesce:
		return g.shuffleReadsLocked(n.Parent)
	}
	return nil
}

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

// Node returns a dataset of the graph.
func (g *Graph) Node(id int) *dataflow.Node {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nodes[id]
}

// ExecutorLost forgets the map outputs an executor held: they are gone
// with it and must be computed again when needed.
func (g *Graph) ExecutorLost(id executorid.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lost[id] = true
	lost := 0
	for sid := range g.shuffles {
		lost += g.dropOutputsLocked(sid, func(o *shuffle.MapStatus) bool { return o.ExecutorID == id })
	}
	if lost > 0 {
		g.log.Info("map outputs lost with their executor", "executor", id, "outputs", lost)
	}
}

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
			g.mu.Lock()
			g.nextStage++
			st.ID = g.nextStage
			g.mu.Unlock()
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
		if attempt+1 >= g.opts.MaxStageAttempts {
			return fmt.Errorf("stage %d failed %d consecutive attempts; last: %w", st.ID, attempt+1, err)
		}
		g.log.Warn("fetch failed; recomputing the lost map outputs", "stage", st.ID, "shuffle", ff.ShuffleID,
			"map", ff.MapID, "executor", ff.ExecutorID, "err", ff.Message)
	}
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
	for attempt := 0; ; attempt++ {
		missing := g.missing(s)
		if len(missing) == 0 {
			return nil
		}
		if attempt >= g.opts.MaxStageAttempts {
			return fmt.Errorf("shuffle %d: map outputs keep getting lost (%d attempts)", sid, attempt)
		}
		// Map outputs are recorded as their tasks succeed (recordMapOutput).
		err := g.Run(ctx, s.dep.Parent, dataflow.Output{Kind: dataflow.WriteShuffle, Shuffle: sid}, missing,
			func(int, []byte) error { return nil })
		if err != nil {
			return err
		}
	}
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

func (g *Graph) missing(s *shuffleState) []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []int
	for i, o := range s.outputs {
		if o == nil {
			out = append(out, i)
		}
	}
	return out
}

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
		t := &dataflow.Task{Stage: stageBytes, Partition: p, MemoryBytes: g.opts.MemoryBytes, MaxInFlight: g.opts.MaxInFlight}
		g.inputsLocked(st, st.Final, p, t)
		b, err := dataflow.EncodeTask(t)
		if err != nil {
			g.mu.Unlock()
			return nil, nil, err
		}
		tasks[i] = scheduler.TaskSpec{Partition: p, Payload: b}
	}
	g.nextJob++
	job := g.nextJob
	g.mu.Unlock()

	var mu sync.Mutex
	var done []result
	err = g.sched.Run(ctx, scheduler.TaskSetSpec{
		JobID: job, StageID: st.ID, StageAttempt: st.Attempt, Func: dataflow.TaskFunc, Tasks: tasks,
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
				refs = append(refs, shuffle.BlockRef{MapID: m, TaskID: o.TaskID, ExecutorID: o.ExecutorID,
					Address: o.Address, Size: o.Sizes[p]})
			}
			t.Blocks[sid][p] = refs
		}
	}
}
