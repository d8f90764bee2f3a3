package dataflow

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"iter"

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

// guard re-panics a panic of the function named fn with the record that
// caused it. Panics already attributed by a later step pass through.
func guard[T any](fn string, dec codec.Decoder[T], cur *[]byte) {
	r := recover()
	if r == nil {
		return
	}
	if _, ok := r.(*RecordPanic); ok {
		panic(r)
	}
	desc := "(unknown)"
	if *cur != nil {
		if v, _, err := dec(*cur); err == nil {
			desc = fmt.Sprintf("%+v", v)
			if len(desc) > 200 {
				desc = desc[:200] + "…"
			}
		}
	}
	panic(&RecordPanic{Func: fn, Value: r, Record: desc})
}

// MapTransform applies f to each record.
func MapTransform[T, U any](name string, f func(T) U) Transform {
	return func(_ context.Context, _ funcs.Task, parent Producer) Producer {
		return func(emit func([]byte) error) error {
			dec, enc := codec.DecoderFor[T](), codec.EncoderFor[U]()
			var cur, buf []byte
			defer guard(name, dec, &cur)
			return parent(func(rec []byte) error {
				cur = rec
				v, _, err := dec(rec)
				if err != nil {
					return err
				}
				buf = enc(buf[:0], f(v))
				return emit(buf)
			})
		}
	}
}

// FlatMapTransform emits what f emits for each record.
func FlatMapTransform[T, U any](name string, f func(T, func(U))) Transform {
	return func(_ context.Context, _ funcs.Task, parent Producer) Producer {
		return func(emit func([]byte) error) error {
			dec, enc := codec.DecoderFor[T](), codec.EncoderFor[U]()
			var cur, buf []byte
			var emitErr error
			out := func(u U) {
				if emitErr == nil {
					buf = enc(buf[:0], u)
					emitErr = emit(buf)
				}
			}
			defer guard(name, dec, &cur)
			return parent(func(rec []byte) error {
				cur = rec
				v, _, err := dec(rec)
				if err != nil {
					return err
				}
				f(v, out)
				return emitErr
			})
		}
	}
}

// FilterTransform keeps the records for which f is true.
func FilterTransform[T any](name string, f func(T) bool) Transform {
	return func(_ context.Context, _ funcs.Task, parent Producer) Producer {
		return func(emit func([]byte) error) error {
			dec := codec.DecoderFor[T]()
			var cur []byte
			defer guard(name, dec, &cur)
			return parent(func(rec []byte) error {
				cur = rec
				v, _, err := dec(rec)
				if err != nil {
					return err
				}
				if f(v) {
					return emit(rec)
				}
				return nil
			})
		}
	}
}

// KeyByTransform pairs each record with the key f computes from it.
func KeyByTransform[T, K any](name string, f func(T) K) Transform {
	return func(_ context.Context, _ funcs.Task, parent Producer) Producer {
		return func(emit func([]byte) error) error {
			dec, enc := codec.DecoderFor[T](), codec.EncoderFor[K]()
			var cur, key, buf []byte
			defer guard(name, dec, &cur)
			return parent(func(rec []byte) error {
				cur = rec
				v, _, err := dec(rec)
				if err != nil {
					return err
				}
				key = enc(key[:0], f(v))
				buf = codec.AppendPairBytes(buf[:0], key, rec)
				return emit(buf)
			})
		}
	}
}

// MapPartitionsTransform gives f the partition's records as a sequence.
func MapPartitionsTransform[T, U any](name string, f func(context.Context, funcs.Task, iter.Seq[T], func(U)) error) Transform {
	return func(ctx context.Context, t funcs.Task, parent Producer) Producer {
		return func(emit func([]byte) error) error {
			dec, enc := codec.DecoderFor[T](), codec.EncoderFor[U]()
			var cur, buf []byte
			var inErr, outErr error
			seq := func(yield func(T) bool) {
				inErr = parent(func(rec []byte) error {
					cur = rec
					v, _, err := dec(rec)
					if err != nil {
						return err
					}
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
			defer guard(name, dec, &cur)
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
	m      map[string]*A
	size   int64
	decV   codec.Decoder[V]
	encA   codec.Encoder[A]
	first  func(V) A
	fold   func(A, V) A
	buf    []byte
	fnName string
}

func (c *mergeCombiner[A, V]) Add(key, value []byte) error {
	v, _, err := c.decV(value)
	if err != nil {
		return err
	}
	if acc := c.m[string(key)]; acc != nil {
		*acc = c.fold(*acc, v)
		return nil
	}
	acc := new(A)
	*acc = c.first(v)
	c.m[string(key)] = acc
	c.size += int64(len(key)+len(value)) + 64
	return nil
}

func (c *mergeCombiner[A, V]) Size() int64 { return c.size }

func (c *mergeCombiner[A, V]) Drain(emit func(key, acc []byte) error) error {
	m := c.m
	// A fresh map, not clear(m): a map keeps its buckets, and iterating a
	// large emptied map for every later small drain is quadratic.
	c.m, c.size = make(map[string]*A), 0
	for k, acc := range m {
		c.buf = c.encA(c.buf[:0], *acc)
		if err := emit([]byte(k), c.buf); err != nil {
			return err
		}
	}
	return nil
}

// MergeCombiner builds combiners merging values with a reduce function.
func MergeCombiner[V any](name string, f func(V, V) V) func() Combiner {
	return func() Combiner {
		return &mergeCombiner[V, V]{
			m: map[string]*V{}, decV: codec.DecoderFor[V](), encA: codec.EncoderFor[V](),
			first: func(v V) V { return v }, fold: f, fnName: name,
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
			fold:  f, fnName: name,
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
