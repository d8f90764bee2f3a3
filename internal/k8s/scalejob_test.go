//go:build integration

package k8s

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/dag"
	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

// BenchmarkScaleJob runs a job with a shuffle on N executors simulated as in
// the allocation benchmarks, and loses a tenth of them in its reduce stage:
//
//	DROVER_SCALE_N=1000 go test -run '^$' -bench '^BenchmarkScaleJob$' -benchtime 1x -timeout 30m ./internal/k8s/
//
// The driver allocates N executors, then runs the same job twice: a map
// stage of tiny tasks into a reduce stage that sums by key,
// DROVER_SCALE_TASKS tasks in all (default 10 per executor,
// DROVER_SCALE_REDUCERS of them reduce tasks, default 10). Each map task
// reads 4 numbers of a range; one in ten keeps them, keys them by one key
// and sums them into its shuffle output, the others write an empty one
// (a filter before an aggregation). Every reducer so fetches from about a
// tenth of the executors: the shuffle service keeps a connection to each
// peer it fetched from, and one to every executor from each of 10 reducers
// would be 100,000 connections at 10,000 executors, more than a process's
// 20,000 files here and gigabytes of buffers. The first run is the reference; in the second, once its
// reduce stage started, the child process holding every tenth executor is
// SIGKILLed and their pods are deleted through the API. Both must return
// exactly the sums computed here, the second may run again at most the map
// tasks whose outputs lived on the lost executors, and no other executor
// may be lost. The executors are real executors (internal/executor) in
// child processes of this test binary, which registers the job's
// functions in every process.
func BenchmarkScaleJob(b *testing.B) {
	env := scaleEnv.Env(b)
	n := scaleN()
	job := scaleJobFor(n)
	var runs []scaleRun
	for b.Loop() {
		runs = append(runs, allocationRun(b, env, allocation{policy: "adaptive", n: n, job: &job}))
	}
	r := runs[len(runs)-1]
	j := r.Job
	b.ReportMetric(j.Lossy.Elapsed.Seconds()*1e9, "ns/op")
	b.ReportMetric(r.Elapsed.Seconds(), "s-to-registered")
	b.ReportMetric(j.Clean.Elapsed.Seconds(), "s-to-result-no-loss")
	b.ReportMetric(j.Lossy.Elapsed.Seconds(), "s-to-result")
	// The map stages of the two runs differ with the machine's load; the
	// time lost is the reduce stage's against the reference's, from its
	// submission to the job's end.
	b.ReportMetric((j.Lossy.fromReduce() - j.Clean.fromReduce()).Seconds(), "s-lost-to-failure")
	b.ReportMetric(float64(r.peakRSS)/(1<<20), "driver-peak-rss-MiB")
	b.ReportMetric(r.cpu.Seconds(), "driver-cpu-s")
	b.ReportMetric(j.Clean.CPU.Seconds(), "driver-cpu-s-job-no-loss")
	b.ReportMetric(j.Lossy.CPU.Seconds(), "driver-cpu-s-job")
	b.ReportMetric(float64(writes(r.Driver))/float64(n), "writes/executor")
	b.ReportMetric(float64(len(j.Lossy.Removed)), "executors-lost")
	b.ReportMetric(float64(j.Lossy.LostOutputs), "map-outputs-lost")
	b.ReportMetric(float64(j.Lossy.MapLaunches-job.MapTasks), "map-tasks-rerun")
	b.ReportMetric(float64(j.Lossy.ReduceLaunches-job.Reducers), "reduce-tasks-rerun")
	b.ReportMetric(float64(job.MapTasks+job.Reducers), "tasks")
}

// The job's functions, registered in every process of the test binary (the
// driver and the executor hosts) under these names.
const (
	scaleKeptFn = "k8s.scaleJobKept"
	scaleKeyFn  = "k8s.scaleJobKey"
	scaleSumFn  = "k8s.scaleJobSum"
	// scaleRecords is how many numbers each map task reads: all get the
	// same key, so a map output is one block of one record, or empty.
	scaleRecords = 4
	// scaleEvery is how many map tasks there are for one that keeps its
	// numbers.
	scaleEvery = 10
	// scaleKeys is how many keys the job sums by.
	scaleKeys = 1000
)

// scaleKept and scaleKey see the map task's index in v/scaleRecords.
func scaleKept(v int64) bool { return (v/scaleRecords)%scaleEvery == 0 }
func scaleKey(v int64) int64 { return (v / scaleRecords / scaleEvery) % scaleKeys }

func init() {
	for _, f := range []*dataflow.Function{
		{Name: scaleKeptFn, Transforms: map[dataflow.Mode]dataflow.Transform{dataflow.ModeFilter: dataflow.FilterTransform(scaleKeptFn, scaleKept)}},
		{Name: scaleKeyFn, Transforms: map[dataflow.Mode]dataflow.Transform{dataflow.ModeKeyBy: dataflow.KeyByTransform(scaleKeyFn, scaleKey)}},
		{Name: scaleSumFn, Merge: dataflow.MergeCombiner(func(a, b int64) int64 { return a + b })},
	} {
		if err := dataflow.Register(f); err != nil {
			panic(err)
		}
	}
}

// scaleJobParams is the job the driver runs, in driverParams.
type scaleJobParams struct {
	MapTasks, Reducers int
	// CleanOnly runs the job once, without the lossy run: the fault
	// tests check its answer, the executors all kept.
	CleanOnly bool `json:",omitempty"`
}

// scaleJobFor is the job for n executors: DROVER_SCALE_TASKS tasks (10 per
// executor by default), DROVER_SCALE_REDUCERS of them reducers (default 10).
// Each reduce task fetches from about every executor holding a map output
// for its partition, and the shuffle service keeps its connections, so the
// reducers multiply the connections (and their memory) between executors.
func scaleJobFor(n int) scaleJobParams {
	tasks, reducers := 10*n, 10
	if v, err := strconv.Atoi(os.Getenv("DROVER_SCALE_TASKS")); err == nil && v > 0 {
		tasks = v
	}
	if v, err := strconv.Atoi(os.Getenv("DROVER_SCALE_REDUCERS")); err == nil && v > 0 {
		reducers = v
	}
	return scaleJobParams{MapTasks: tasks - reducers, Reducers: reducers}
}

// expectedSums is the job's answer, computed directly.
func (p scaleJobParams) expectedSums() map[int64]int64 {
	want := map[int64]int64{}
	for v := range int64(p.MapTasks * scaleRecords) {
		if scaleKept(v) {
			want[scaleKey(v)] += v
		}
	}
	return want
}

// scaleJobResult is what the driver reports of its two runs of the job.
type scaleJobResult struct {
	Clean, Lossy jobRun
}

// jobRun is one run of the job, as the driver's event stream saw it.
type jobRun struct {
	Elapsed time.Duration // from the job's start to its last result
	CPU     time.Duration // the driver's CPU time over the job
	Sums    map[int64]int64
	// MapLaunches and ReduceLaunches count task attempts sent to
	// executors, in all attempts of the job's map and reduce stages.
	MapLaunches, ReduceLaunches int
	// Removed are the executors removed during the job; LostOutputs the
	// map outputs that lived on them when the reduce stage started.
	Removed     []executorid.ID
	LostOutputs int
	// Causes counts the removals by cause.
	Causes map[string]int
	// ReduceDoneAtLoss is how many reduce tasks had succeeded when the
	// first executor was removed; FetchFailures counts reduce attempts
	// that failed to fetch a block; StageAttempts the stages submitted.
	ReduceDoneAtLoss, FetchFailures, StageAttempts int
	// LossToEnd is the time from the first removal to the job's end;
	// RemovalSpan from the first removal to the last.
	LossToEnd, RemovalSpan time.Duration
	// Stages are the job's stage attempts in the order submitted, with
	// their times from the job's start.
	Stages []stageRun
}

// fromReduce is the time from the reduce stage's first submission to the
// job's end.
func (r jobRun) fromReduce() time.Duration {
	for _, s := range r.Stages {
		if !s.Map {
			return r.Elapsed - s.Start
		}
	}
	return r.Elapsed
}

// stageRun is one stage attempt of a job.
type stageRun struct {
	ID         int
	Map        bool
	Tasks      int
	Start, End time.Duration
	Err        string `json:",omitempty"`
}

func (s stageRun) String() string {
	kind := "reduce"
	if s.Map {
		kind = "map"
	}
	end := "…"
	if s.End > 0 {
		end = s.End.Round(10 * time.Millisecond).String()
	}
	return fmt.Sprintf("%s stage %d (%d tasks) %s–%s", kind, s.ID, s.Tasks, s.Start.Round(10*time.Millisecond), end)
}

// jobTracker follows the driver's event stream for the figures of a job.
type jobTracker struct {
	mu     sync.Mutex
	job    int64
	run    *jobRun
	kinds  map[int]bool // stage id → map stage (else reduce)
	shuf   string       // the map stage's name suffix
	output map[int]executorid.ID
	// atReduce is where the map outputs lived when the reduce stage was
	// first submitted.
	atReduce map[int]executorid.ID
	lostAt   time.Time
	start    time.Time // the job's
	reduce   func()    // called once, when the reduce stage is first submitted
	done     int       // reduce tasks succeeded
}

// syncEvent marks a point in the event stream: the tracker closes done
// when it reaches it, so everything published before was handled.
type syncEvent struct {
	events.Header
	done chan struct{}
}

func (t *jobTracker) handle(e events.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := e.(*syncEvent); ok {
		close(s.done)
		return
	}
	r := t.run
	if r == nil {
		return
	}
	switch e := e.(type) {
	case *events.StageSubmitted:
		if e.JobID != t.job {
			return
		}
		r.StageAttempts++
		isMap := strings.HasSuffix(e.Name, t.shuf)
		t.kinds[e.StageID] = isMap
		r.Stages = append(r.Stages, stageRun{ID: e.StageID, Map: isMap, Tasks: e.NumTasks, Start: e.Time.Sub(t.start)})
		if !isMap && t.atReduce == nil {
			t.atReduce = maps.Clone(t.output)
			if t.reduce != nil {
				t.reduce()
			}
		}
	case *events.StageCompleted:
		for i := range r.Stages {
			if s := &r.Stages[i]; s.ID == e.StageID && s.End == 0 {
				s.End, s.Err = e.Time.Sub(t.start), e.Err
			}
		}
	case *events.TaskStart:
		isMap, ok := t.kinds[e.StageID]
		switch {
		case !ok:
		case isMap:
			r.MapLaunches++
		default:
			r.ReduceLaunches++
		}
	case *events.TaskEnd:
		isMap, ok := t.kinds[e.StageID]
		if !ok {
			return
		}
		if !e.Launch.IsZero() { // its start came with it
			if isMap {
				r.MapLaunches++
			} else {
				r.ReduceLaunches++
			}
		}
		if !isMap && e.FetchFailed {
			r.FetchFailures++
		}
		if e.State != events.TaskSuccess {
			return
		}
		if isMap {
			t.output[e.Partition] = e.Executor
		} else {
			t.done++
		}
	case *events.ExecutorRemoved:
		if len(r.Removed) == 0 {
			t.lostAt = e.Time
			r.ReduceDoneAtLoss = t.done
		}
		r.Removed = append(r.Removed, e.Executor)
		r.Causes[e.Cause]++
		r.RemovalSpan = e.Time.Sub(t.lostAt)
		for _, ex := range t.atReduce {
			if ex == e.Executor {
				r.LostOutputs++
			}
		}
	}
}

// sync waits until the tracker handled every event published before.
func (t *jobTracker) sync(bus *events.Bus) {
	done := make(chan struct{})
	bus.Publish(&syncEvent{done: done})
	<-done
}

// runScaleJobs runs the job twice on the driver's graph: the second time,
// the driver prints "lose" once the reduce stage is submitted, for the
// benchmark to take executors away.
func runScaleJobs(ctx context.Context, g *dag.Graph, bus *events.Bus, p scaleJobParams) (*scaleJobResult, error) {
	t := &jobTracker{}
	bus.Subscribe("scale-job", 1<<24, t.handle)
	clean, err := runScaleJob(ctx, g, bus, t, p, 1, nil)
	if err != nil {
		return nil, fmt.Errorf("the job without loss: %w", err)
	}
	if p.CleanOnly {
		return &scaleJobResult{Clean: *clean}, nil
	}
	lossy, err := runScaleJob(ctx, g, bus, t, p, 2, func() { fmt.Println("lose") })
	if err != nil {
		return nil, fmt.Errorf("the job with executors lost: %w", err)
	}
	return &scaleJobResult{Clean: *clean, Lossy: *lossy}, nil
}

func runScaleJob(ctx context.Context, g *dag.Graph, bus *events.Bus, t *jobTracker, p scaleJobParams, id int64, onReduce func()) (*jobRun, error) {
	src := g.AddNode(dataflow.Node{Kind: dataflow.Range, Start: 0, End: int64(p.MapTasks * scaleRecords), Step: 1, NumPartitions: p.MapTasks}, nil)
	kept := g.AddNode(dataflow.Node{Kind: dataflow.Func, Parent: src, Fn: scaleKeptFn, Mode: dataflow.ModeFilter, NumPartitions: p.MapTasks}, nil)
	keyed := g.AddNode(dataflow.Node{Kind: dataflow.Func, Parent: kept, Fn: scaleKeyFn, Mode: dataflow.ModeKeyBy, NumPartitions: p.MapTasks}, nil)
	sum := &dataflow.Aggregation{Comb: scaleSumFn}
	sid := g.AddShuffle(dataflow.Shuffle{Parent: keyed, NumPartitions: p.Reducers, Partitioner: dataflow.HashPartitioner, MapCombine: sum})
	final := g.AddNode(dataflow.Node{Kind: dataflow.Shuffled, Shuffles: []int{sid}, Reduce: dataflow.Combine, Agg: sum, NumPartitions: p.Reducers}, nil)
	defer func() {
		// The next run recomputes everything; the executors drop these
		// map outputs.
		g.Forget(final, []int{sid})
		g.Forget(keyed, nil)
		g.Forget(kept, nil)
		g.Forget(src, nil)
	}()
	run := &jobRun{Sums: map[int64]int64{}, Causes: map[string]int{}}
	t.mu.Lock()
	t.job, t.run, t.kinds, t.output, t.atReduce, t.done, t.reduce = id, run, map[int]bool{}, map[int]executorid.ID{}, nil, 0, onReduce
	t.shuf = fmt.Sprintf("→ shuffle %d", sid)
	t.lostAt = time.Time{}
	t.mu.Unlock()
	cpu := cpuTime(syscall.RUSAGE_SELF)
	start := time.Now()
	t.mu.Lock()
	t.start = start
	t.mu.Unlock()
	var mu sync.Mutex
	err := g.Run(events.WithJob(ctx, id), final, dataflow.Output{Kind: dataflow.Collect}, partitionsUpTo(p.Reducers),
		func(_ int, res []byte) error {
			mu.Lock()
			defer mu.Unlock()
			return dataflow.ForEachFramed(res, func(rec []byte) error {
				kv, err := codec.Decode[codec.Pair[int64, int64]](rec)
				if err != nil {
					return err
				}
				if _, dup := run.Sums[kv.Key]; dup {
					return fmt.Errorf("key %d in two results", kv.Key)
				}
				run.Sums[kv.Key] = kv.Value
				return nil
			})
		})
	end := time.Now()
	run.Elapsed, run.CPU = end.Sub(start), cpuTime(syscall.RUSAGE_SELF)-cpu
	if err != nil {
		return nil, err
	}
	t.sync(bus)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.run = nil
	if !t.lostAt.IsZero() {
		run.LossToEnd = end.Sub(t.lostAt)
	}
	return run, nil
}

func partitionsUpTo(n int) []int {
	ps := make([]int, n)
	for i := range ps {
		ps[i] = i
	}
	return ps
}

// checkScaleJob checks the driver's report of the job against the answer
// and the executors this benchmark killed.
func checkScaleJob(b testing.TB, p scaleJobParams, res *scaleJobResult, victims []executorid.ID) {
	if res == nil {
		b.Fatal("the driver reported no job")
	}
	want := p.expectedSums()
	runs := map[string]jobRun{"without loss": res.Clean, "with executors lost": res.Lossy}
	if p.CleanOnly {
		runs = map[string]jobRun{"without loss": res.Clean}
	}
	for name, r := range runs {
		if diff := cmp.Diff(want, r.Sums); diff != "" {
			b.Errorf("the job %s: sums by key (-want +got):\n%s", name, diff)
		}
	}
	c := res.Clean
	if c.MapLaunches != p.MapTasks || c.ReduceLaunches != p.Reducers || len(c.Removed) > 0 {
		b.Errorf("the job without loss launched %d map and %d reduce tasks (want %d and %d) and lost executors %v",
			c.MapLaunches, c.ReduceLaunches, p.MapTasks, p.Reducers, c.Removed)
	}
	if p.CleanOnly {
		b.Logf("job of %d map and %d reduce tasks: %s, %d keys in its answer",
			p.MapTasks, p.Reducers, c.Elapsed.Round(time.Millisecond), len(c.Sums))
		return
	}
	l := res.Lossy
	if diff := cmp.Diff(slices.Sorted(slices.Values(victims)), slices.Sorted(slices.Values(l.Removed))); diff != "" {
		b.Errorf("executors removed in the job, against those killed (-killed +removed):\n%s", diff)
	}
	if len(victims) < scaleN()/10 {
		b.Errorf("%d executors killed, want a tenth of %d", len(victims), scaleN())
	}
	if l.FetchFailures == 0 && l.ReduceLaunches == p.Reducers {
		b.Errorf("the loss did not reach the reduce stage: no fetch failed, no reduce task ran again")
	}
	if rerun := l.MapLaunches - p.MapTasks; rerun > l.LostOutputs {
		b.Errorf("%d map tasks ran again for %d map outputs lost", rerun, l.LostOutputs)
	}
	if l.LostOutputs == 0 {
		b.Errorf("the lost executors held no map outputs")
	}
	b.Logf("job of %d map and %d reduce tasks: %s without loss (%s from the reduce stage on); %s with %d executors lost (removed over %s) %s before its end "+
		"(%d of %d reduce tasks done then; %s from the reduce stage on): %d map outputs lost, %d map and %d reduce tasks run again, %d fetch failures, %d stage attempts",
		p.MapTasks, p.Reducers, c.Elapsed.Round(time.Millisecond), c.fromReduce().Round(time.Millisecond), l.Elapsed.Round(time.Millisecond), len(l.Removed), l.RemovalSpan.Round(time.Millisecond),
		l.LossToEnd.Round(time.Millisecond), l.ReduceDoneAtLoss, p.Reducers, l.fromReduce().Round(time.Millisecond), l.LostOutputs, l.MapLaunches-p.MapTasks,
		l.ReduceLaunches-p.Reducers, l.FetchFailures, l.StageAttempts)
	b.Logf("removals with executors lost, by cause: %v", l.Causes)
	b.Logf("stages without loss: %v", c.Stages)
	b.Logf("stages with executors lost: %v", l.Stages)
}
