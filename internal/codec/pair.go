package codec

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"unsafe"
)

// Pair is a key and a value: the records of keyed datasets.
type Pair[K, V any] struct {
	Key   K
	Value V
}

func (Pair[K, V]) encoder() any {
	ek, ev := EncoderFor[K](), EncoderFor[V]()
	return Encoder[Pair[K, V]](func(b []byte, p Pair[K, V]) []byte {
		return appendPair(b, func(b []byte) []byte { return ek(b, p.Key) }, func(b []byte) []byte { return ev(b, p.Value) })
	})
}

func (Pair[K, V]) decoder() any {
	dk, dv := DecoderFor[K](), DecoderFor[V]()
	return Decoder[Pair[K, V]](func(b []byte) (Pair[K, V], []byte, error) {
		var p Pair[K, V]
		kb, rest, err := ReadBytesView(b)
		if err != nil {
			return p, b, err
		}
		if p.Key, kb, err = dk(kb); err != nil {
			return p, b, fmt.Errorf("key: %w", err)
		}
		if len(kb) != 0 {
			return p, b, fmt.Errorf("key: %d bytes left over", len(kb))
		}
		if p.Value, rest, err = dv(rest); err != nil {
			return p, b, fmt.Errorf("value: %w", err)
		}
		return p, rest, nil
	})
}

// appendPair appends a pair: the key's length, the key, the value. Keys
// shorter than 128 bytes, the common case, are written in place.
func appendPair(b []byte, key, value func([]byte) []byte) []byte {
	start := len(b)
	b = key(append(b, 0))
	n := len(b) - start - 1
	if n < 0x80 {
		b[start] = byte(n)
	} else {
		var hdr [binary.MaxVarintLen64]byte
		k := binary.PutUvarint(hdr[:], uint64(n))
		b = append(b, hdr[:k-1]...)
		copy(b[start+k:], b[start+1:start+1+n])
		copy(b[start:], hdr[:k])
	}
	return value(b)
}

// isPair reports whether t is a Pair instantiation itself, not a struct
// that embeds one (and so has its methods).
func isPair(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.PkgPath() == pairPkg && strings.HasPrefix(t.Name(), "Pair[")
}

var pairPkg = reflect.TypeFor[Pair[int, int]]().PkgPath()

// SplitPair splits the encoding of a Pair into the key's and the value's
// encodings, without knowing their types.
func SplitPair(rec []byte) (key, value []byte, err error) {
	key, value, err = ReadBytesView(rec)
	if err != nil {
		return nil, nil, fmt.Errorf("malformed pair: %w", err)
	}
	return key, value, nil
}

// AppendPairBytes appends a pair from its key's and value's encodings.
func AppendPairBytes(b, key, value []byte) []byte {
	b = appendBytes(b, key)
	return append(b, value...)
}

// ValueSink receives the values of pairs, typed, with their keys encoded:
// an aggregation that knows the value type but not the key type.
type ValueSink[V any] interface {
	AddValue(key []byte, v V) error
}

// StringKeySink is a ValueSink that also takes string keys as they are:
// looking a key up in place is much faster than first writing its
// encoding into a buffer (the hash then reads bytes still in flight).
type StringKeySink[V any] interface {
	AddStringKey(key string, v V) error
}

// pairAdder is implemented by Pair types: it adapts a ValueSink of their
// value type to a function of the pair.
type pairAdder interface {
	adder(sink any) (any, bool)
}

func (Pair[K, V]) adder(sink any) (any, bool) {
	if ss, ok := sink.(StringKeySink[V]); ok {
		if _, isString := any((*K)(nil)).(*string); isString {
			return func(p Pair[K, V]) error {
				return ss.AddStringKey(*(*string)(unsafe.Pointer(&p.Key)), p.Value)
			}, true
		}
	}
	s, ok := sink.(ValueSink[V])
	if !ok {
		return nil, false
	}
	ek := EncoderFor[K]()
	var key []byte
	return func(p Pair[K, V]) error {
		key = ek(key[:0], p.Key)
		return s.AddValue(key, p.Value)
	}, true
}

// PairAdder returns a function that hands pairs of type U to sink without
// encoding their values, when U is a Pair whose value type sink accepts.
// Generic code that knows only U gets the typed path this way.
func PairAdder[U any](sink any) (func(U) error, bool) {
	pa, ok := any(*new(U)).(pairAdder)
	if !ok {
		return nil, false
	}
	f, ok := pa.adder(sink)
	if !ok {
		return nil, false
	}
	add, ok := f.(func(U) error) // false for a struct that embeds a Pair
	return add, ok
}
