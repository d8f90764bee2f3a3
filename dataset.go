package drover

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dag"
	"github.com/drover-project/drover/internal/dataflow"
)

// KV is a record of a keyed dataset.
type KV[K comparable, V any] = codec.Pair[K, V]

// Joined is the value of a joined record: the values of both sides.
type Joined[V, W any] struct {
	Left  V
	Right W
}

// Optional is a value that may be absent: the right side of a left outer
// join.
type Optional[T any] struct {
	Valid bool
	Value T
}

// Dataset is a distributed, immutable collection of records of type T,
// split into partitions. Transformations describe a new dataset and run
// nothing; actions (Collect, Count, Take, Reduce, Foreach, SaveAsTextFile)
// run the jobs that compute it. A transformation that cannot be built
// (an unusable function, a type that cannot be encoded) yields a dataset
// whose actions return that error before any task runs.
type Dataset[T any] struct {
	c     *Context
	id    int
	parts int
	err   error
	// parents are the datasets this one is computed from: while it is
	// reachable, so are they, and their part of the graph stays.
	parents []any
}

// NumPartitions is the number of partitions of the dataset.
func (d *Dataset[T]) NumPartitions() int { return d.parts }

// Err is the error that stops the dataset from being computed, if any.
func (d *Dataset[T]) Err() error { return d.err }

func failed[T any](c *Context, err error) *Dataset[T] { return &Dataset[T]{c: c, err: err} }

func newDataset[T any](c *Context, n dataflow.Node, data [][]byte, parents ...any) *Dataset[T] {
	if err := codec.Check[T](); err != nil {
		return failed[T](c, err)
	}
	d := &Dataset[T]{c: c, id: c.graph.AddNode(n, data), parts: n.NumPartitions, parents: parents}
	if c.tracking {
		// Once the program holds neither this dataset nor one computed from
		// it, nothing can read its node or its shuffles again.
		runtime.AddCleanup(d, func(o owned) { o.graph.Forget(o.node, o.shuffles) },
			owned{c.graph, d.id, n.Shuffles})
	}
	return d
}

// owned is what a dataset holds in its application's graph.
type owned struct {
	graph    *dag.Graph
	node     int
	shuffles []int
}

func (c *Context) partitions(n int) int {
	if n > 0 {
		return n
	}
	return max(1, c.DefaultParallelism())
}

// narrow adds a registered function applied record by record.
func narrow[T, U any](d *Dataset[T], f *fn, mode dataflow.Mode) *Dataset[U] {
	if d.err != nil {
		return failed[U](d.c, d.err)
	}
	if f.err != nil {
		return failed[U](d.c, f.err)
	}
	return newDataset[U](d.c, dataflow.Node{Kind: dataflow.Func, Parent: d.id, Fn: f.name, Mode: mode,
		NumPartitions: d.parts}, nil, d)
}

// Map applies f to every record.
func Map[T, U any](d *Dataset[T], f *MapFunc[T, U]) *Dataset[U] {
	return narrow[T, U](d, &f.fn, dataflow.ModeMap)
}

// FlatMap replaces every record with the records f emits for it.
func FlatMap[T, U any](d *Dataset[T], f *FlatMapFunc[T, U]) *Dataset[U] {
	return narrow[T, U](d, &f.fn, dataflow.ModeFlatMap)
}

// MapPartitions replaces each partition with what f emits for it.
func MapPartitions[T, U any](d *Dataset[T], f *PartitionFunc[T, U]) *Dataset[U] {
	return narrow[T, U](d, &f.fn, dataflow.ModeMapPartitions)
}

// KeyBy pairs every record with the key f computes from it.
func KeyBy[T any, K comparable](d *Dataset[T], f *MapFunc[T, K]) *Dataset[KV[K, T]] {
	return narrow[T, KV[K, T]](d, &f.fn, dataflow.ModeKeyBy)
}

// Filter keeps the records for which f is true.
func (d *Dataset[T]) Filter(f *FilterFunc[T]) *Dataset[T] {
	return narrow[T, T](d, &f.fn, dataflow.ModeFilter)
}

// Coalesce merges partitions into n without a shuffle: each new partition
// reads a run of neighbouring ones. It never increases the partitions; use
// Repartition for that.
func (d *Dataset[T]) Coalesce(n int) *Dataset[T] {
	if d.err != nil || n >= d.parts {
		return d
	}
	if n < 1 {
		return failed[T](d.c, fmt.Errorf("coalesce: want at least 1 partition, got %d", n))
	}
	groups := make([][]int, n)
	for i := range n {
		for q := d.parts * i / n; q < d.parts*(i+1)/n; q++ {
			groups[i] = append(groups[i], q)
		}
	}
	return newDataset[T](d.c, dataflow.Node{Kind: dataflow.Coalesce, Parent: d.id, Groups: groups, NumPartitions: n}, nil, d)
}

// Repartition spreads the records evenly over n partitions with a shuffle.
func (d *Dataset[T]) Repartition(n int) *Dataset[T] {
	if d.err != nil {
		return d
	}
	if n < 1 {
		return failed[T](d.c, fmt.Errorf("repartition: want at least 1 partition, got %d", n))
	}
	sid := d.c.graph.AddShuffle(dataflow.Shuffle{Parent: d.id, NumPartitions: n, Partitioner: dataflow.RoundRobin})
	return newDataset[T](d.c, dataflow.Node{Kind: dataflow.Shuffled, Shuffles: []int{sid}, Reduce: dataflow.Pass,
		NumPartitions: n}, nil, d)
}

// shufflePartitions is the partition count of a shuffle's output when the
// caller gives none: spark.default.parallelism when set, else the largest
// parent's, as Spark's default partitioner does.
func (c *Context) shufflePartitions(n int, parents ...int) int {
	if n > 0 {
		return n
	}
	if v, ok := config.DefaultParallelism.Lookup(c.conf); ok && v > 0 {
		return v
	}
	return max(1, slices.Max(parents))
}

// ReduceByKey merges the values of each key with f, first within each map
// partition and then across them, into numPartitions partitions (≤ 0: the
// default).
func ReduceByKey[K comparable, V any](d *Dataset[KV[K, V]], f *ReduceFunc[V], numPartitions int) *Dataset[KV[K, V]] {
	if d.err != nil {
		return d
	}
	if f.err != nil {
		return failed[KV[K, V]](d.c, f.err)
	}
	return combineByKey[K, V, V](d, &dataflow.Aggregation{Comb: f.name}, numPartitions)
}

// AggregateByKey folds the values of each key into an accumulator that
// starts at zero, with seq within partitions and comb across them.
func AggregateByKey[K comparable, V, A any](d *Dataset[KV[K, V]], zero A, seq *FoldFunc[A, V], comb *ReduceFunc[A], numPartitions int) *Dataset[KV[K, A]] {
	if d.err != nil {
		return failed[KV[K, A]](d.c, d.err)
	}
	if err := errors.Join(seq.err, comb.err); err != nil {
		return failed[KV[K, A]](d.c, err)
	}
	z, err := codec.Encode(zero)
	if err != nil {
		return failed[KV[K, A]](d.c, fmt.Errorf("aggregate by key: zero value: %w", err))
	}
	return combineByKey[K, V, A](d, &dataflow.Aggregation{Seq: seq.name, Comb: comb.name, Zero: z}, numPartitions)
}

func combineByKey[K comparable, V, A any](d *Dataset[KV[K, V]], agg *dataflow.Aggregation, numPartitions int) *Dataset[KV[K, A]] {
	n := d.c.shufflePartitions(numPartitions, d.parts)
	sid := d.c.graph.AddShuffle(dataflow.Shuffle{Parent: d.id, NumPartitions: n, Partitioner: dataflow.HashPartitioner,
		MapCombine: agg})
	return newDataset[KV[K, A]](d.c, dataflow.Node{Kind: dataflow.Shuffled, Shuffles: []int{sid}, Reduce: dataflow.Combine,
		Agg: &dataflow.Aggregation{Comb: agg.Comb}, NumPartitions: n}, nil, d)
}

// GroupByKey gathers the values of each key into one list. Prefer
// ReduceByKey or AggregateByKey when the values are combined afterwards:
// they combine before the shuffle.
func GroupByKey[K comparable, V any](d *Dataset[KV[K, V]], numPartitions int) *Dataset[KV[K, []V]] {
	if d.err != nil {
		return failed[KV[K, []V]](d.c, d.err)
	}
	n := d.c.shufflePartitions(numPartitions, d.parts)
	sid := d.c.graph.AddShuffle(dataflow.Shuffle{Parent: d.id, NumPartitions: n, Partitioner: dataflow.HashPartitioner})
	return newDataset[KV[K, []V]](d.c, dataflow.Node{Kind: dataflow.Shuffled, Shuffles: []int{sid}, Reduce: dataflow.Group,
		ByteValues: reflect.TypeFor[V]().Kind() == reflect.Uint8, NumPartitions: n}, nil, d)
}

// Join pairs the values of each key present on both sides.
func Join[K comparable, V, W any](l *Dataset[KV[K, V]], r *Dataset[KV[K, W]], numPartitions int) *Dataset[KV[K, Joined[V, W]]] {
	return join[K, V, W, Joined[V, W]](l, r, numPartitions, false, nil)
}

// LeftOuterJoin pairs every value on the left with the values of its key on
// the right, or with an absent value when the right has none.
func LeftOuterJoin[K comparable, V, W any](l *Dataset[KV[K, V]], r *Dataset[KV[K, W]], numPartitions int) *Dataset[KV[K, Joined[V, Optional[W]]]] {
	var zero W
	z, err := codec.Encode(zero)
	if err != nil {
		return failed[KV[K, Joined[V, Optional[W]]]](l.c, fmt.Errorf("left outer join: %w", err))
	}
	return join[K, V, W, Joined[V, Optional[W]]](l, r, numPartitions, true, z)
}

func join[K comparable, V, W, J any](l *Dataset[KV[K, V]], r *Dataset[KV[K, W]], numPartitions int, outer bool, zeroRight []byte) *Dataset[KV[K, J]] {
	if err := errors.Join(l.err, r.err); err != nil {
		return failed[KV[K, J]](l.c, err)
	}
	if l.c != r.c {
		return failed[KV[K, J]](l.c, errors.New("join: datasets of different applications"))
	}
	n := l.c.shufflePartitions(numPartitions, l.parts, r.parts)
	g := l.c.graph
	left := g.AddShuffle(dataflow.Shuffle{Parent: l.id, NumPartitions: n, Partitioner: dataflow.HashPartitioner, Tagged: true, Side: 0})
	right := g.AddShuffle(dataflow.Shuffle{Parent: r.id, NumPartitions: n, Partitioner: dataflow.HashPartitioner, Tagged: true, Side: 1})
	return newDataset[KV[K, J]](l.c, dataflow.Node{Kind: dataflow.Shuffled, Shuffles: []int{left, right}, Reduce: dataflow.Join,
		LeftOuter: outer, ZeroRight: zeroRight, NumPartitions: n}, nil, l, r)
}

// SortByKey sorts the records by key into numPartitions ranges of keys,
// ascending or descending: partition i holds keys before partition i+1's.
// Like Spark, it runs a job at once to sample the keys for the ranges.
func SortByKey[K cmp.Ordered, V any](d *Dataset[KV[K, V]], ascending bool, numPartitions int) *Dataset[KV[K, V]] {
	if d.err != nil {
		return d
	}
	order := &dataflow.SortOrder{Kind: keyKind(reflect.TypeFor[K]().Kind()), Descending: !ascending}
	n := d.c.shufflePartitions(numPartitions, d.parts)
	bounds, err := d.c.rangeBounds(d.id, d.parts, n, order)
	if err != nil {
		return failed[KV[K, V]](d.c, fmt.Errorf("sort by key: sampling keys: %w", err))
	}
	sid := d.c.graph.AddShuffle(dataflow.Shuffle{Parent: d.id, NumPartitions: n, Partitioner: dataflow.RangePartitioner,
		Bounds: bounds, Order: order})
	return newDataset[KV[K, V]](d.c, dataflow.Node{Kind: dataflow.Shuffled, Shuffles: []int{sid}, Reduce: dataflow.Sort,
		Sort: order, NumPartitions: n}, nil, d)
}

func keyKind(k reflect.Kind) dataflow.KeyKind {
	switch k {
	case reflect.String:
		return dataflow.KeyString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return dataflow.KeyInt
	case reflect.Float64:
		return dataflow.KeyFloat64
	case reflect.Float32:
		return dataflow.KeyFloat32
	}
	return dataflow.KeyUint
}

// rangeBounds samples the keys of a dataset and picks n-1 bounds that cut
// them into n ranges of about equal weight, as Spark's RangePartitioner
// does: each sampled key stands for its partition's records divided by the
// partition's sample size.
func (c *Context) rangeBounds(id, parts, n int, order *dataflow.SortOrder) ([][]byte, error) {
	if n <= 1 {
		return nil, nil
	}
	perPartition := (3*min(20*n, 1_000_000) + parts - 1) / parts
	type sample struct {
		key    []byte
		weight float64
	}
	var samples []sample
	onSample := func(_ int, b []byte) error {
		count, rest, err := codec.DecoderFor[int64]()(b)
		if err != nil {
			return err
		}
		var keys [][]byte
		if err := dataflow.ForEachFramed(rest, func(k []byte) error {
			keys = append(keys, append([]byte(nil), k...))
			return nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			samples = append(samples, sample{k, float64(count) / float64(len(keys))})
		}
		return nil
	}
	err := c.job(func(ctx context.Context) error {
		return c.graph.Run(ctx, id, dataflow.Output{Kind: dataflow.SampleKeys, SampleSize: perPartition}, seq(parts), onSample)
	})
	if err != nil || len(samples) == 0 {
		return nil, err
	}
	less := dataflow.Comparator(order)
	slices.SortFunc(samples, func(a, b sample) int { return less(a.key, b.key) })
	var total float64
	for _, s := range samples {
		total += s.weight
	}
	step := total / float64(n)
	var bounds [][]byte
	var cum float64
	target := step
	for _, s := range samples {
		cum += s.weight
		if cum < target {
			continue
		}
		if len(bounds) == 0 || less(s.key, bounds[len(bounds)-1]) > 0 {
			bounds = append(bounds, s.key)
			if len(bounds) == n-1 {
				break
			}
		}
		target += step
	}
	return bounds, nil
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
