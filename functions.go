package drover

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/funcs"
)

// Functions used by datasets are registered once, in package-level var
// declarations, so that every process of the binary knows them by name:
// Go cannot send a closure to another process. Each Register* function
// returns a typed handle for the dataset operations that take it.

// fn is what every handle holds: the registered name, or why the function
// cannot be used.
type fn struct {
	name string
	err  error
}

// Name is the name the function was registered under.
func (f *fn) Name() string { return f.name }

// Err reports why the function cannot be used in a job, if it cannot.
func (f *fn) Err() error { return f.err }

// register adds a dataset function after checking that the types it
// touches can cross processes. A duplicate name panics in every process
// alike; other problems make the handle unusable, reported by the first
// job that uses it.
func register(f *dataflow.Function, checks ...error) fn {
	h := fn{name: f.Name}
	if err := errors.Join(checks...); err != nil {
		h.err = fmt.Errorf("function %q: %w", f.Name, err)
		return h
	}
	if _, dup := funcs.Lookup(f.Name); dup {
		panic(fmt.Sprintf("registering function %q: name already registered", f.Name))
	}
	if err := dataflow.Register(f); err != nil {
		if errors.Is(err, funcs.ErrFrozen) {
			h.err = err
			return h
		}
		panic(err)
	}
	return h
}

// MapFunc maps a record to a record.
type MapFunc[T, U any] struct{ fn }

// RegisterMap registers f for Map and KeyBy.
func RegisterMap[T, U any](name string, f func(T) U) *MapFunc[T, U] {
	return &MapFunc[T, U]{register(&dataflow.Function{Name: name, Transforms: map[dataflow.Mode]dataflow.Transform{
		dataflow.ModeMap:   dataflow.MapTransform(name, f),
		dataflow.ModeKeyBy: dataflow.KeyByTransform(name, f),
	}, Fused: map[dataflow.Mode]dataflow.FusedTransform{
		dataflow.ModeMap: dataflow.MapFused(name, f),
	}}, codec.Check[T](), codec.Check[U]())}
}

// FlatMapFunc maps a record to any number of records, passed to emit.
type FlatMapFunc[T, U any] struct{ fn }

// RegisterFlatMap registers f for FlatMap.
func RegisterFlatMap[T, U any](name string, f func(in T, emit func(U))) *FlatMapFunc[T, U] {
	return &FlatMapFunc[T, U]{register(&dataflow.Function{Name: name, Transforms: map[dataflow.Mode]dataflow.Transform{
		dataflow.ModeFlatMap: dataflow.FlatMapTransform(name, f),
	}, Fused: map[dataflow.Mode]dataflow.FusedTransform{
		dataflow.ModeFlatMap: dataflow.FlatMapFused(name, f),
	}}, codec.Check[T](), codec.Check[U]())}
}

// FilterFunc selects records.
type FilterFunc[T any] struct{ fn }

// RegisterFilter registers f for Filter.
func RegisterFilter[T any](name string, f func(T) bool) *FilterFunc[T] {
	return &FilterFunc[T]{register(&dataflow.Function{Name: name, Transforms: map[dataflow.Mode]dataflow.Transform{
		dataflow.ModeFilter: dataflow.FilterTransform(name, f),
	}}, codec.Check[T]())}
}

// PartitionFunc transforms a whole partition.
type PartitionFunc[T, U any] struct{ fn }

// RegisterMapPartitions registers f for MapPartitions: it reads the
// partition's records from in and passes its output to emit.
func RegisterMapPartitions[T, U any](name string, f func(tc *TaskContext, in iter.Seq[T], emit func(U)) error) *PartitionFunc[T, U] {
	wrapped := func(ctx context.Context, t funcs.Task, in iter.Seq[T], emit func(U)) error {
		return f(&TaskContext{Context: ctx, task: t}, in, emit)
	}
	return &PartitionFunc[T, U]{register(&dataflow.Function{Name: name, Transforms: map[dataflow.Mode]dataflow.Transform{
		dataflow.ModeMapPartitions: dataflow.MapPartitionsTransform(name, wrapped),
	}}, codec.Check[T](), codec.Check[U]())}
}

// ReduceFunc merges two values into one; it must be associative and
// commutative, because values are merged in no particular order.
type ReduceFunc[T any] struct {
	fn
	f func(T, T) T
}

// RegisterReduce registers f for ReduceByKey, AggregateByKey (to merge
// accumulators) and Reduce.
func RegisterReduce[T any](name string, f func(T, T) T) *ReduceFunc[T] {
	return &ReduceFunc[T]{fn: register(&dataflow.Function{Name: name,
		Merge:  dataflow.MergeCombiner(f),
		Reduce: dataflow.ReduceSink(f),
	}, codec.Check[T]()), f: f}
}

// FoldFunc folds a value into an accumulator.
type FoldFunc[A, V any] struct{ fn }

// RegisterFold registers f as the sequence function of AggregateByKey.
func RegisterFold[A, V any](name string, f func(acc A, v V) A) *FoldFunc[A, V] {
	return &FoldFunc[A, V]{register(&dataflow.Function{Name: name,
		Fold: dataflow.FoldCombiner(name, f),
	}, codec.Check[A](), codec.Check[V]())}
}

// ForeachFunc consumes records on the executors.
type ForeachFunc[T any] struct{ fn }

// RegisterForeach registers f for Foreach.
func RegisterForeach[T any](name string, f func(tc *TaskContext, v T) error) *ForeachFunc[T] {
	wrapped := func(ctx context.Context, t funcs.Task, v T) error {
		return f(&TaskContext{Context: ctx, task: t}, v)
	}
	return &ForeachFunc[T]{register(&dataflow.Function{Name: name,
		Foreach: dataflow.ForeachSink(wrapped),
	}, codec.Check[T]())}
}
