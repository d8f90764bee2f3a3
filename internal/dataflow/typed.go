package dataflow

import (
	"context"
	"fmt"
	"iter"
	"unsafe"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/funcs"
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
	return fused(name, func(add func(U) error) func(T, []byte) error {
		return func(v T, _ []byte) error { return add(f(v)) }
	})
}

// FlatMapFused is FlatMapTransform into a typed sink.
func FlatMapFused[T, U any](name string, f func(T, func(U))) FusedTransform {
	return fused(name, func(add func(U) error) func(T, []byte) error {
		var addErr error
		out := func(u U) {
			if addErr == nil {
				addErr = add(u)
			}
		}
		return func(v T, _ []byte) error {
			f(v, out)
			return addErr
		}
	})
}

// fused is what MapFused and FlatMapFused share: step makes, for a run,
// the per-record function that feeds the sink through add.
func fused[T, U any](name string, step func(add func(U) error) func(T, []byte) error) FusedTransform {
	return func(_ context.Context, _ funcs.Task, in Input, sink any) (func() error, bool) {
		add, ok := codec.PairAdder[U](sink)
		if !ok {
			return nil, false
		}
		return func() error {
			r := newReader[T](in)
			each := step(add)
			defer r.guard(name)
			return r.each(in, each)
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
