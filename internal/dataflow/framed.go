package dataflow

import (
	"fmt"

	"github.com/drover-project/drover/internal/codec"
)

// AppendFramed appends a record with its length, for blocks of records
// whose type the reader does not know. A frame is codec's encoding of a
// byte string, the one ForEachFramed reads back.
func AppendFramed(b, rec []byte) []byte { return codec.AppendBytes(b, rec) }

// ForEachFramed calls fn with each record of a block of framed records.
func ForEachFramed(b []byte, fn func(rec []byte) error) error { return forEachFramed(b, fn) }

func forEachFramed(b []byte, fn func(rec []byte) error) error {
	for len(b) > 0 {
		rec, rest, err := codec.ReadBytesView(b)
		if err != nil {
			return fmt.Errorf("malformed record block: %w", err)
		}
		if err := fn(rec); err != nil {
			return err
		}
		b = rest
	}
	return nil
}
