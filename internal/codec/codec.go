package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unsafe"
)

// An encoding is self-delimiting, so records can be concatenated and nested
// without framing:
//
//	bool                   1 byte
//	signed integers        zig-zag varint
//	unsigned integers      uvarint
//	float32, float64       4 or 8 bytes, little endian (complex: two of them)
//	string, []byte         uvarint length, then the bytes
//	slice, map             uvarint count, then the elements (map: key, value)
//	array                  the elements
//	struct                 the exported fields in order (all fields must be exported)
//	pointer                0 for nil, or 1 and the element
//	Pair[K, V]             uvarint length of the key's encoding, the key, the value
//	BinaryMarshaler        its MarshalBinary output as a byte string
//
// The key of a Pair carries its length so that shuffles can split a record
// into key and value without knowing the types.

var errShort = errors.New("unexpected end of data")

// Encoder appends the encoding of a T. An Encoder may keep scratch space:
// use one per goroutine.
type Encoder[T any] func(b []byte, v T) []byte

// Decoder decodes a T from the front of b and returns the rest.
type Decoder[T any] func(b []byte) (T, []byte, error)

// pairCoder is implemented by Pair types, so that generic code can build
// their coders with the key and value types known at compile time.
type pairCoder interface {
	encoder() any
	decoder() any
}

// EncoderFor returns an encoder for T. Common types take a fast path with
// no reflection. It panics if T cannot be encoded; Check reports that as an
// error beforehand.
func EncoderFor[T any]() Encoder[T] {
	switch any((*T)(nil)).(type) {
	case *string:
		return any(Encoder[string](appendString)).(Encoder[T])
	case *[]byte:
		return any(Encoder[[]byte](appendBytes)).(Encoder[T])
	case *int:
		return any(Encoder[int](func(b []byte, v int) []byte { return binary.AppendVarint(b, int64(v)) })).(Encoder[T])
	case *int64:
		return any(Encoder[int64](binary.AppendVarint)).(Encoder[T])
	case *int32:
		return any(Encoder[int32](func(b []byte, v int32) []byte { return binary.AppendVarint(b, int64(v)) })).(Encoder[T])
	case *uint64:
		return any(Encoder[uint64](binary.AppendUvarint)).(Encoder[T])
	case *float64:
		return any(Encoder[float64](func(b []byte, v float64) []byte {
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		})).(Encoder[T])
	case *bool:
		return any(Encoder[bool](appendBool)).(Encoder[T])
	}
	if pc, ok := any(*new(T)).(pairCoder); ok {
		// A struct embedding a Pair has its methods too: only a Pair
		// itself takes this path.
		if enc, ok := pc.encoder().(Encoder[T]); ok {
			return enc
		}
	}
	c := mustCoder(reflect.TypeFor[T]())
	tmp := new(T)
	return func(b []byte, v T) []byte {
		*tmp = v
		b = c.enc(b, unsafe.Pointer(tmp))
		var zero T
		*tmp = zero // keep no reference to v's memory
		return b
	}
}

// DecoderFor returns a decoder for T; see EncoderFor.
func DecoderFor[T any]() Decoder[T] {
	switch any((*T)(nil)).(type) {
	case *string:
		return any(Decoder[string](readString)).(Decoder[T])
	case *[]byte:
		return any(Decoder[[]byte](readBytes)).(Decoder[T])
	case *int:
		return any(Decoder[int](func(b []byte) (int, []byte, error) {
			n, rest, err := readVarint(b)
			return int(n), rest, err
		})).(Decoder[T])
	case *int64:
		return any(Decoder[int64](readVarint)).(Decoder[T])
	case *uint64:
		return any(Decoder[uint64](readUvarint)).(Decoder[T])
	case *float64:
		return any(Decoder[float64](func(b []byte) (float64, []byte, error) {
			if len(b) < 8 {
				return 0, b, errShort
			}
			return math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:], nil
		})).(Decoder[T])
	}
	if pc, ok := any(*new(T)).(pairCoder); ok {
		if dec, ok := pc.decoder().(Decoder[T]); ok {
			return dec
		}
	}
	c := mustCoder(reflect.TypeFor[T]())
	tmp := new(T)
	d := new(decState)
	return func(b []byte) (T, []byte, error) {
		var zero T
		*tmp = zero
		*d = newDecState()
		rest, err := c.dec(b, unsafe.Pointer(tmp), d)
		v := *tmp
		*tmp = zero
		return v, rest, err
	}
}

// Encode returns the encoding of v.
func Encode[T any](v T) ([]byte, error) {
	if err := Check[T](); err != nil {
		return nil, err
	}
	return EncoderFor[T]()(nil, v), nil
}

// Decode decodes b, produced by Encode[T], into a T. Bytes left over are an
// error.
func Decode[T any](b []byte) (T, error) {
	if err := Check[T](); err != nil {
		var zero T
		return zero, err
	}
	v, rest, err := DecoderFor[T]()(b)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%d bytes left over", len(rest))
	}
	if err != nil {
		return v, fmt.Errorf("decoding %s: %w", reflect.TypeFor[T](), err)
	}
	return v, nil
}

// Check reports whether values of type T can be encoded.
func Check[T any]() error {
	t := reflect.TypeFor[T]()
	if _, err := coderFor(t); err != nil {
		return fmt.Errorf("type %s cannot cross processes: %w", t, err)
	}
	return nil
}
