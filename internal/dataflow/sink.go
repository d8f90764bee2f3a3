package dataflow

import (
	"context"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/funcs"
)

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
