package shuffle

import (
	"encoding/binary"
	"errors"
	"fmt"
)

var errMalformed = errors.New("malformed record framing")

// AppendRecord appends one framed record, uvarint(len(key)) key
// uvarint(len(value)) value, to b.
func AppendRecord(b, key, value []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

// ForEachRecord calls fn with every record of block in order. The slices alias
// block. It returns fn's first error as is, or an error when the framing is
// malformed (a truncated record or a bad length).
func ForEachRecord(block []byte, fn func(key, value []byte) error) error {
	off := 0
	for off < len(block) {
		key, n, err := readField(block, off)
		if err != nil {
			return fmt.Errorf("key at offset %d: %w", off, err)
		}
		value, n2, err := readField(block, n)
		if err != nil {
			return fmt.Errorf("value at offset %d: %w", n, err)
		}
		if err := fn(key, value); err != nil {
			return err
		}
		off = n2
	}
	return nil
}

// readField reads one length-prefixed field at off and returns it with the
// offset after it.
func readField(b []byte, off int) ([]byte, int, error) {
	l, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return nil, 0, errMalformed
	}
	off += n
	if l > uint64(len(b)-off) {
		return nil, 0, errMalformed
	}
	end := off + int(l)
	return b[off:end:end], end, nil
}
