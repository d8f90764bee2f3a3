package codec

import (
	"encoding/binary"
	"fmt"
)

// AppendString appends the encoding of a string.
func AppendString(b []byte, s string) []byte { return appendString(b, s) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBytes appends the encoding of a byte slice (the same as a string's).
func AppendBytes(b, s []byte) []byte { return appendBytes(b, s) }

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// ReadLen reads a uvarint length and checks that that many bytes follow.
func ReadLen(b []byte) (int, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, b, errShort
	}
	if n > uint64(len(b)-k) {
		return 0, b, fmt.Errorf("length %d exceeds the %d bytes left", n, len(b)-k)
	}
	return int(n), b[k:], nil
}

// ReadBytesView reads a byte string without copying it.
func ReadBytesView(b []byte) ([]byte, []byte, error) {
	n, rest, err := ReadLen(b)
	if err != nil {
		return nil, b, err
	}
	return rest[:n:n], rest[n:], nil
}

func readString(b []byte) (string, []byte, error) {
	v, rest, err := ReadBytesView(b)
	return string(v), rest, err
}

func readBytes(b []byte) ([]byte, []byte, error) {
	v, rest, err := ReadBytesView(b)
	if err != nil {
		return nil, b, err
	}
	return append([]byte(nil), v...), rest, nil
}

func readVarint(b []byte) (int64, []byte, error) {
	n, k := binary.Varint(b)
	if k <= 0 {
		return 0, b, errShort
	}
	return n, b[k:], nil
}

func readUvarint(b []byte) (uint64, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, b, errShort
	}
	return n, b[k:], nil
}
