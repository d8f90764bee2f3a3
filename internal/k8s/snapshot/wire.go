package snapshot

import (
	"errors"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// errWireType is a field of the wrong wire type, which the generated
// decoder rejects.
var errWireType = errors.New("protobuf field of an unexpected wire type")

// field is one field of a message: its value is v for the bytes wire
// type, x for a varint.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   []byte
	x   uint64
}

// next reads the field at the start of b and returns it with the rest of b.
func next(b []byte) (field, []byte, error) {
	// Most of a pod's fields are strings and messages with one-byte tags
	// and lengths, read here without protowire's calls.
	if len(b) >= 2 && b[0] < 0x80 && b[0]&7 == byte(protowire.BytesType) && b[0]>>3 != 0 && b[1] < 0x80 {
		if n := int(b[1]) + 2; n <= len(b) {
			return field{num: protowire.Number(b[0] >> 3), typ: protowire.BytesType, v: b[2:n]}, b[n:], nil
		}
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, nil, protowire.ParseError(n)
	}
	b = b[n:]
	f := field{num: num, typ: typ}
	switch typ {
	case protowire.VarintType:
		f.x, n = protowire.ConsumeVarint(b)
	case protowire.BytesType:
		f.v, n = protowire.ConsumeBytes(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return field{}, nil, protowire.ParseError(n)
	}
	return f, b[n:], nil
}

// bytes is a length-delimited field's value.
func (f field) bytes() ([]byte, error) {
	if f.typ != protowire.BytesType {
		return nil, errWireType
	}
	return f.v, nil
}

// str is a string field's value.
func (f field) str() (string, error) {
	v, err := f.bytes()
	return string(v), err
}

// varint is a varint field's value.
func (f field) varint() (uint64, error) {
	if f.typ != protowire.VarintType {
		return 0, errWireType
	}
	return f.x, nil
}

// eachField calls read with each field of the message b in turn, until
// one fails.
func eachField(b []byte, read func(f field) error) error {
	for len(b) > 0 {
		f, rest, err := next(b)
		if err != nil {
			return err
		}
		b = rest
		if err := read(f); err != nil {
			return err
		}
	}
	return nil
}

// with reads the message field f with read.
func with(f field, read func([]byte) error) error {
	v, err := f.bytes()
	if err != nil {
		return err
	}
	return read(v)
}

// stringEntry reads a map<string, string> entry; a missing key or value is
// "".
func stringEntry(b []byte) (k, v []byte, err error) {
	err = eachField(b, func(f field) (err error) {
		switch f.num {
		case entryKey:
			k, err = f.bytes()
		case entryValue:
			v, err = f.bytes()
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return k, v, nil
}

// readTime reads a meta/v1 Time as its decoder does: an empty message is
// the zero time, and the nanoseconds are dropped.
func readTime(b []byte) (time.Time, error) {
	if len(b) == 0 {
		return time.Time{}, nil
	}
	var secs uint64
	err := eachField(b, func(f field) (err error) {
		switch f.num {
		case timeSeconds:
			secs, err = f.varint()
		case timeNanos:
			_, err = f.varint()
		}
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(int64(secs), 0).Local(), nil
}
