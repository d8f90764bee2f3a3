package dag

import (
	"log/slog"
	"slices"
	"sync"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/lineage"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

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
	// Lineage stamps every shuffle with its lineage fingerprint, which
	// executors keep with its map outputs, so that a restarted driver's
	// graph takes the outputs an earlier attempt computed (Adoption). Set
	// when the driver may restart
	// (spark.kubernetes.driver.restartPolicy=OnFailure).
	Lineage bool
	// Adoption holds the outputs executors kept from earlier attempts;
	// nil for none.
	Adoption *Adoption
	// StageSkipped, if set, hears of each map stage that runs no task
	// because it took all its outputs from the adoption.
	StageSkipped func()
	Logger       *slog.Logger
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
	lost map[executorid.ID]bool
	// lineage fingerprints shuffles when Options.Lineage is set.
	lineage *lineage.Hasher
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

// New returns an empty graph running its tasks on sched, which tells it
// of every lost executor.
func New(sched *scheduler.Scheduler, opts Options) *Graph {
	if opts.MaxStageAttempts < 1 {
		opts.MaxStageAttempts = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Graph{sched: sched, opts: opts, log: opts.Logger, nodes: map[int]*dataflow.Node{},
		data: map[int][][]byte{}, shuffles: map[int]*shuffleState{}, lost: map[executorid.ID]bool{}}
	if opts.Lineage {
		g.lineage = lineage.NewHasher(lockedView{g})
	}
	if sched != nil {
		sched.OnExecutorLost(g.ExecutorLost)
	}
	return g
}

// OutputLineage is the lineage fingerprint of writing dataset node as out
// says, in hex; "" when the graph has no lineage (Options.Lineage).
func (g *Graph) OutputLineage(node int, out dataflow.Output) (string, error) {
	if g.lineage == nil {
		return "", nil
	}
	g.mu.Lock()
	n, err := g.lineage.Node(node)
	g.mu.Unlock()
	if err != nil {
		return "", err
	}
	f, err := lineage.Output(n, out)
	if err != nil {
		return "", err
	}
	return f.String(), nil
}

// lockedView is the graph as the lineage hasher reads it, with g.mu held.
type lockedView struct{ g *Graph }

func (v lockedView) Node(id int) *dataflow.Node { return v.g.nodes[id] }
func (v lockedView) Data(id int) [][]byte       { return v.g.data[id] }
func (v lockedView) Shuffle(id int) *dataflow.Shuffle {
	if s := v.g.shuffles[id]; s != nil {
		return s.dep
	}
	return nil
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
	if g.lineage != nil {
		// The hasher reads the shuffle from the graph: after it is in.
		f, err := g.lineage.Shuffle(s.ID)
		if err != nil {
			// Without a fingerprint the shuffle is computed in every
			// attempt, as without restarts.
			g.log.Warn("shuffle without a lineage fingerprint", "shuffle", s.ID, "err", err)
		} else {
			s.Lineage = f.String()
		}
	}
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

// Node returns a dataset of the graph.
func (g *Graph) Node(id int) *dataflow.Node {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nodes[id]
}
