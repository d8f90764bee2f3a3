package codec

import (
	"encoding/binary"
	"fmt"
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
