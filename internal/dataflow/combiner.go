package dataflow

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/drover-project/drover/internal/codec"
)

// mergeCombiner keeps one accumulator per key in a map keyed by the key's
// encoding: lookups do not allocate, only new keys do.
type mergeCombiner[A, V any] struct {
	m     map[string]*A
	size  int64
	decV  codec.Decoder[V]
	encA  codec.Encoder[A]
	first func(V) A
	fold  func(A, V) A
	buf   []byte
	limit int64
	flush func(key, acc []byte) error
	raw   bool // keys are strings as they are, not encoded
	key   []byte
	// grow tracks the accumulators' own size when their type can grow
	// with every fold (strings, slices, maps): nil for fixed-size ones,
	// which the per-key estimate covers.
	grow *growth
}

// growth estimates the size of accumulators that grow as they fold, as
// Spark's SizeTracker does: their encoded size is measured after 64, 128,
// 256, … updates since the last drain, and extrapolated in between by the
// bytes per update of the last two measures. Measures cost about two
// encodings per update in all.
type growth struct {
	updates, nextSample int64
	sampledAt, sampled  int64
	perUpdate           float64
}

func (g *growth) estimate() int64 {
	return g.sampled + int64(g.perUpdate*float64(g.updates-g.sampledAt))
}

func (c *mergeCombiner[A, V]) Add(key, value []byte) error {
	v, _, err := c.decV(value)
	if err != nil {
		return err
	}
	if c.grow != nil {
		// An encoded value (on the reduce side, a whole accumulator of a
		// map task) adds about its own size: counted as it is, since a few
		// large merges would slip between samples.
		c.size += int64(len(value))
		return c.add(key, v, false)
	}
	return c.add(key, v, true)
}

// AddValue folds a typed value: the path of a map-side combine fed
// directly by the function that produced the pairs.
func (c *mergeCombiner[A, V]) AddValue(key []byte, v V) error { return c.add(key, v, true) }

// add folds v into key's accumulator; sample says whether the growth
// estimate has to count the update.
func (c *mergeCombiner[A, V]) add(key []byte, v V, sample bool) error {
	if acc := c.m[string(key)]; acc != nil { // no allocation for a lookup
		*acc = c.fold(*acc, v)
		return c.folded(sample)
	}
	return c.insert(string(key), v, sample)
}

// folded counts an update of an accumulator that may have grown and
// drains past the limit.
func (c *mergeCombiner[A, V]) folded(sample bool) error {
	if c.grow == nil {
		return nil
	}
	if sample {
		c.updated()
	}
	if c.limit > 0 && c.Size() > c.limit {
		return c.Drain(c.flush)
	}
	return nil
}

// updated counts an update for the growth estimate and measures the
// accumulators when it is time.
func (c *mergeCombiner[A, V]) updated() {
	g := c.grow
	if g.updates++; g.updates < g.nextSample {
		return
	}
	var size int64
	for _, acc := range c.m {
		c.buf = c.encA(c.buf[:0], *acc)
		size += int64(len(c.buf))
	}
	if d := g.updates - g.sampledAt; d > 0 && g.sampledAt > 0 {
		g.perUpdate = max(0, float64(size-g.sampled)/float64(d))
	}
	g.sampledAt, g.sampled, g.nextSample = g.updates, size, 2*g.updates
}

// AddStringKey is AddValue for a string key given as it is, not encoded. A
// combiner takes keys one way or the other, never both.
func (c *mergeCombiner[A, V]) AddStringKey(key string, v V) error {
	c.raw = true
	if acc := c.m[key]; acc != nil {
		*acc = c.fold(*acc, v)
		return c.folded(true)
	}
	return c.insert(strings.Clone(key), v, true) // the key may point into a larger string
}

// insert adds a new key's accumulator and drains past the limit.
func (c *mergeCombiner[A, V]) insert(key string, v V, sample bool) error {
	acc := new(A)
	*acc = c.first(v)
	c.m[key] = acc
	c.size += int64(2*len(key)) + 96
	if c.grow != nil && sample {
		c.updated()
	}
	if c.limit > 0 && c.Size() > c.limit {
		return c.Drain(c.flush)
	}
	return nil
}

// SetLimit makes AddValue drain into flush when the accumulators pass
// limit bytes.
func (c *mergeCombiner[A, V]) SetLimit(limit int64, flush func(key, acc []byte) error) {
	c.limit, c.flush = limit, flush
}

// Size estimates the bytes the keys and accumulators take.
func (c *mergeCombiner[A, V]) Size() int64 {
	if c.grow != nil {
		return c.size + c.grow.estimate()
	}
	return c.size
}

func (c *mergeCombiner[A, V]) Drain(emit func(key, acc []byte) error) error {
	m := c.m
	// A fresh map, not clear(m): a map keeps its buckets, and iterating a
	// large emptied map for every later small drain is quadratic.
	c.m, c.size = make(map[string]*A), 0
	if c.grow != nil {
		*c.grow = growth{nextSample: firstSample}
	}
	for k, acc := range m {
		if c.raw {
			c.key = codec.AppendString(c.key[:0], k)
		} else {
			c.key = append(c.key[:0], k...)
		}
		c.buf = c.encA(c.buf[:0], *acc)
		if err := emit(c.key, c.buf); err != nil {
			return err
		}
	}
	return nil
}

// firstSample is the update count of the first growth measure.
const firstSample = 64

// growthFor is a growth tracker for accumulators of type A when their size
// can change (they hold strings, slices or maps), else nil.
func growthFor[A any]() *growth {
	if !variableSize(reflect.TypeFor[A]()) {
		return nil
	}
	return &growth{nextSample: firstSample}
}

// variableSize reports whether values of t can differ in size.
func variableSize(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
		return true
	case reflect.Array:
		return variableSize(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if variableSize(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// MergeCombiner builds combiners merging values with a reduce function.
func MergeCombiner[V any](f func(V, V) V) func() Combiner {
	return func() Combiner {
		return &mergeCombiner[V, V]{
			m: map[string]*V{}, decV: codec.DecoderFor[V](), encA: codec.EncoderFor[V](),
			first: func(v V) V { return v }, fold: f, grow: growthFor[V](),
		}
	}
}

// FoldCombiner builds combiners folding values into accumulators that start
// from an encoded zero.
func FoldCombiner[A, V any](name string, f func(A, V) A) func(zero []byte) (Combiner, error) {
	return func(zero []byte) (Combiner, error) {
		decA := codec.DecoderFor[A]()
		if _, _, err := decA(zero); err != nil {
			return nil, fmt.Errorf("decoding the zero value of %s: %w", name, err)
		}
		return &mergeCombiner[A, V]{
			m: map[string]*A{}, decV: codec.DecoderFor[V](), encA: codec.EncoderFor[A](),
			// Decode the zero afresh for every key: accumulators must not
			// share slices or maps.
			first: func(v V) A { z, _, _ := decA(zero); return f(z, v) },
			fold:  f,
			grow:  growthFor[A](),
		}, nil
	}
}
