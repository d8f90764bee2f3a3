package dataflow

import (
	"context"
	"fmt"
	"sync"

	"github.com/drover-project/drover/internal/funcs"
)

// Producer runs the records of one partition through emit. The record
// passed to emit is valid only during the call.
type Producer func(emit func(rec []byte) error) error

// Input is what a step reads: its parent's records, encoded, and, when the
// parent is a text file, its lines as strings too, which a step taking
// strings reads without a copy per line.
type Input struct {
	Records Producer
	Lines   func(emit func(line string) error) error
}

// Transform builds a step from its parent's producer.
type Transform func(ctx context.Context, t funcs.Task, in Input) Producer

// Combiner merges encoded values by key: the typed part of aggregation,
// built by the registered functions that know the value types.
type Combiner interface {
	// Add folds an encoded value into the key's accumulator.
	Add(key, value []byte) error
	// Size estimates the memory the accumulators hold, in bytes.
	Size() int64
	// Drain emits every key with its encoded accumulator and empties the
	// combiner.
	Drain(emit func(key, acc []byte) error) error
}

// Sink consumes the records of a partition and produces the task's result.
type Sink interface {
	Add(rec []byte) error
	Result() ([]byte, error)
}

// Function is a registered dataset function: the forms it can take.
type Function struct {
	Name       string
	Transforms map[Mode]Transform
	// Fused are the modes that can feed a typed sink directly.
	Fused map[Mode]FusedTransform
	// Fold builds a combiner folding values into accumulators starting from
	// an encoded zero (AggregateByKey's seqOp).
	Fold func(zero []byte) (Combiner, error)
	// Merge builds a combiner merging accumulators (a reduce function).
	Merge func() Combiner
	// Reduce and Foreach build the sinks of those actions.
	Reduce  func(ctx context.Context) Sink
	Foreach func(ctx context.Context, t funcs.Task) Sink
}

var (
	mu       sync.RWMutex
	registry = map[string]*Function{}
)

// Register adds a dataset function. Names are unique per binary and shared
// with task functions.
func Register(f *Function) error {
	if f.Name == "" {
		return fmt.Errorf("registering function: empty name")
	}
	if funcs.Frozen() {
		return fmt.Errorf("registering function %q: %w", f.Name, funcs.ErrFrozen)
	}
	if _, dup := funcs.Lookup(f.Name); dup {
		return fmt.Errorf("registering function %q: name already registered", f.Name)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[f.Name]; dup {
		return fmt.Errorf("registering function %q: name already registered", f.Name)
	}
	registry[f.Name] = f
	return nil
}

// Lookup returns the registered function named name.
func Lookup(name string) (*Function, bool) {
	mu.RLock()
	defer mu.RUnlock()
	f, ok := registry[name]
	return f, ok
}

func lookup(name string) (*Function, error) {
	f, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("function %q is not registered in this binary; is the executor running the same build as the driver?", name)
	}
	return f, nil
}

func transform(name string, mode Mode) (Transform, error) {
	f, err := lookup(name)
	if err != nil {
		return nil, err
	}
	t := f.Transforms[mode]
	if t == nil {
		return nil, fmt.Errorf("function %q cannot be used as %s", name, mode)
	}
	return t, nil
}

// NewCombiner builds the combiner of an aggregation: the map side folds
// values with Seq (or merges them with Comb when Seq is empty); the reduce
// side merges accumulators with Comb.
func NewCombiner(a *Aggregation, mapSide bool) (Combiner, error) {
	if mapSide && a.Seq != "" {
		f, err := lookup(a.Seq)
		if err != nil {
			return nil, err
		}
		if f.Fold == nil {
			return nil, fmt.Errorf("function %q is not a fold function", a.Seq)
		}
		return f.Fold(a.Zero)
	}
	f, err := lookup(a.Comb)
	if err != nil {
		return nil, err
	}
	if f.Merge == nil {
		return nil, fmt.Errorf("function %q is not a reduce function", a.Comb)
	}
	return f.Merge(), nil
}
