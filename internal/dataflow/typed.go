package dataflow

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"unsafe"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/shuffle"
)

// The generic builders below are instantiated by the registration of a
// function, where its types are known, so executors run typed code without
// knowing the types themselves.

// RecordPanic is a panic in a registered function, with the record it was
// processing.
type RecordPanic struct {
	Func   string
	Value  any
	Record string
}

func (p *RecordPanic) Error() string {
	return fmt.Sprintf("%s panicked on record %s: %v", p.Func, p.Record, p.Value)
}

// reader decodes a step's input into T, remembering the record being
// processed so that a panic can name it.
type reader[T any] struct {
	dec  codec.Decoder[T]
	rec  []byte
	line string
	// lines is set when T is string and the input has lines as strings.
	lines bool
}

func newReader[T any](in Input) *reader[T] {
	r := &reader[T]{dec: codec.DecoderFor[T]()}
	if in.Lines != nil {
		_, r.lines = any((*T)(nil)).(*string)
	}
	return r
}

// each calls fn with every input record decoded into T; rec is the
// record's encoding, nil for lines taken as strings.
func (r *reader[T]) each(in Input, fn func(v T, rec []byte) error) error {
	if r.lines {
		return in.Lines(func(s string) error {
			r.line = s
			return fn(*(*T)(unsafe.Pointer(&s)), nil)
		})
	}
	return in.Records(func(rec []byte) error {
		r.rec = rec
		v, _, err := r.dec(rec)
		if err != nil {
			return err
		}
		return fn(v, rec)
	})
}

// guard re-panics a panic of the function named fn with the record that
// caused it. Panics already attributed by a later step pass through.
func (r *reader[T]) guard(fn string) {
	p := recover()
	if p == nil {
		return
	}
	if _, ok := p.(*RecordPanic); ok {
		panic(p)
	}
	desc := "(unknown)"
	if r.lines {
		desc = r.line
	} else if r.rec != nil {
		if v, _, err := r.dec(r.rec); err == nil {
			desc = fmt.Sprintf("%+v", v)
		}
	}
	if len(desc) > 200 {
		desc = desc[:200] + "…"
	}
	panic(&RecordPanic{Func: fn, Value: p, Record: desc})
}

// encoded returns rec, or the encoding of the current line when the record
// came as a string.
func (r *reader[T]) encoded(rec []byte, scratch *[]byte) []byte {
	if rec != nil {
		return rec
	}
	*scratch = codec.AppendString((*scratch)[:0], r.line)
	return *scratch
}

// MapTransform applies f to each record.
func MapTransform[T, U any](name string, f func(T) U) Transform {
	return func(_ context.Context, _ funcs.Task, in Input) Producer {
		return func(emit func([]byte) error) error {
			r, enc := newReader[T](in), codec.EncoderFor[U]()
			var buf []byte
			defer r.guard(name)
			return r.each(in, func(v T, _ []byte) error {
				buf = enc(buf[:0], f(v))
				return emit(buf)
			})
		}
	}
}

// FlatMapTransform emits what f emits for each record.
func FlatMapTransform[T, U any](name string, f func(T, func(U))) Transform {
	return func(_ context.Context, _ funcs.Task, in Input) Producer {
		return func(emit func([]byte) error) error {
			r, enc := newReader[T](in), codec.EncoderFor[U]()
			var buf []byte
			var emitErr error
			out := func(u U) {
				if emitErr == nil {
					buf = enc(buf[:0], u)
					emitErr = emit(buf)
				}
			}
			defer r.guard(name)
			return r.each(in, func(v T, _ []byte) error {
				f(v, out)
				return emitErr
			})
		}
	}
}

// FusedTransform runs a step straight into a sink that takes typed values
// (a map-side combine), skipping the encoding of its output; ok is false
// when the step's output type does not fit the sink.
type FusedTransform func(ctx context.Context, t funcs.Task, in Input, sink any) (run func() error, ok bool)

// MapFused is MapTransform into a typed sink.
func MapFused[T, U any](name string, f func(T) U) FusedTransform {
	return func(_ context.Context, _ funcs.Task, in Input, sink any) (func() error, bool) {
		add, ok := codec.PairAdder[U](sink)
		if !ok {
			return nil, false
		}
		return func() error {
			r := newReader[T](in)
			defer r.guard(name)
			return r.each(in, func(v T, _ []byte) error { return add(f(v)) })
		}, true
	}
}

// FlatMapFused is FlatMapTransform into a typed sink.
func FlatMapFused[T, U any](name string, f func(T, func(U))) FusedTransform {
	return func(_ context.Context, _ funcs.Task, in Input, sink any) (func() error, bool) {
		add, ok := codec.PairAdder[U](sink)
		if !ok {
			return nil, false
		}
		return func() error {
			r := newReader[T](in)
			var addErr error
			out := func(u U) {
				if addErr == nil {
					addErr = add(u)
				}
			}
			defer r.guard(name)
			return r.each(in, func(v T, _ []byte) error {
				f(v, out)
				return addErr
			})
		}, true
	}
}

// FilterTransform keeps the records for which f is true.
func FilterTransform[T any](name string, f func(T) bool) Transform {
	return func(_ context.Context, _ funcs.Task, in Input) Producer {
		return func(emit func([]byte) error) error {
			r := newReader[T](in)
			var scratch []byte
			defer r.guard(name)
			return r.each(in, func(v T, rec []byte) error {
				if f(v) {
					return emit(r.encoded(rec, &scratch))
				}
				return nil
			})
		}
	}
}

// KeyByTransform pairs each record with the key f computes from it.
func KeyByTransform[T, K any](name string, f func(T) K) Transform {
	return func(_ context.Context, _ funcs.Task, in Input) Producer {
		return func(emit func([]byte) error) error {
			r, enc := newReader[T](in), codec.EncoderFor[K]()
			var key, buf, scratch []byte
			defer r.guard(name)
			return r.each(in, func(v T, rec []byte) error {
				key = enc(key[:0], f(v))
				buf = codec.AppendPairBytes(buf[:0], key, r.encoded(rec, &scratch))
				return emit(buf)
			})
		}
	}
}

// MapPartitionsTransform gives f the partition's records as a sequence.
func MapPartitionsTransform[T, U any](name string, f func(context.Context, funcs.Task, iter.Seq[T], func(U)) error) Transform {
	return func(ctx context.Context, t funcs.Task, in Input) Producer {
		return func(emit func([]byte) error) error {
			r, enc := newReader[T](in), codec.EncoderFor[U]()
			var buf []byte
			var inErr, outErr error
			seq := func(yield func(T) bool) {
				inErr = r.each(in, func(v T, _ []byte) error {
					if !yield(v) {
						return errStop
					}
					return outErr
				})
			}
			out := func(u U) {
				if outErr == nil {
					buf = enc(buf[:0], u)
					outErr = emit(buf)
				}
			}
			defer r.guard(name)
			err := f(ctx, t, seq, out)
			for _, e := range []error{outErr, inErr, err} {
				if e != nil && e != errStop {
					return e
				}
			}
			return nil
		}
	}
}

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

type reduceSink[T any] struct {
	dec  codec.Decoder[T]
	enc  codec.Encoder[T]
	f    func(T, T) T
	acc  T
	seen bool
}

func (s *reduceSink[T]) Add(rec []byte) error {
	v, _, err := s.dec(rec)
	if err != nil {
		return err
	}
	if s.seen {
		s.acc = s.f(s.acc, v)
	} else {
		s.acc, s.seen = v, true
	}
	return nil
}

// Result is empty for an empty partition, else the encoded reduction.
func (s *reduceSink[T]) Result() ([]byte, error) {
	if !s.seen {
		return nil, nil
	}
	return s.enc(nil, s.acc), nil
}

// ReduceSink builds the sink of the Reduce action.
func ReduceSink[T any](f func(T, T) T) func(context.Context) Sink {
	return func(context.Context) Sink {
		return &reduceSink[T]{dec: codec.DecoderFor[T](), enc: codec.EncoderFor[T](), f: f}
	}
}

type foreachSink[T any] struct {
	dec codec.Decoder[T]
	f   func(T) error
}

func (s *foreachSink[T]) Add(rec []byte) error {
	v, _, err := s.dec(rec)
	if err != nil {
		return err
	}
	return s.f(v)
}

func (s *foreachSink[T]) Result() ([]byte, error) { return nil, nil }

// ForeachSink builds the sink of the Foreach action.
func ForeachSink[T any](f func(context.Context, funcs.Task, T) error) func(context.Context, funcs.Task) Sink {
	return func(ctx context.Context, t funcs.Task) Sink {
		return &foreachSink[T]{dec: codec.DecoderFor[T](), f: func(v T) error { return f(ctx, t, v) }}
	}
}

// EncodeMapStatus encodes a map task's result.
func EncodeMapStatus(s shuffle.MapStatus) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&s); err != nil {
		return nil, fmt.Errorf("encoding map status: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeMapStatus decodes a map task's result.
func DecodeMapStatus(b []byte) (shuffle.MapStatus, error) {
	var s shuffle.MapStatus
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return s, fmt.Errorf("decoding map status: %w", err)
	}
	return s, nil
}
