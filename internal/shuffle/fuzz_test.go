package shuffle

import (
	"bytes"
	"testing"
)

// FuzzForEachRecord: record framing read from the network or disk yields
// records within the block, or an error; never a panic. The records read
// frame again (canonically) into a block that reads back the same records.
func FuzzForEachRecord(f *testing.F) {
	f.Add(AppendRecord(AppendRecord(nil, []byte("k"), []byte("v")), nil, []byte("second")))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{5, 'a'})
	f.Fuzz(func(t *testing.T, block []byte) {
		read := func(b []byte) ([][2]string, error) {
			var out [][2]string
			err := ForEachRecord(b, func(k, v []byte) error {
				out = append(out, [2]string{string(k), string(v)})
				return nil
			})
			return out, err
		}
		records, err := read(block)
		if err != nil {
			return
		}
		var again []byte
		for _, r := range records {
			again = AppendRecord(again, []byte(r[0]), []byte(r[1]))
		}
		back, err := read(again)
		if err != nil || len(back) != len(records) {
			t.Fatalf("records framed again read back as %d records, %v; want %d", len(back), err, len(records))
		}
		for i := range back {
			if back[i] != records[i] {
				t.Fatalf("record %d reads back as %q, want %q", i, back[i], records[i])
			}
		}
	})
}

// FuzzLocateBlock: a map index read from disk (or corrupted on it) locates
// a block inside the data file, or is an error; never a panic, and nothing
// is allocated beyond what the index file holds.
func FuzzLocateBlock(f *testing.F) {
	f.Add(encodeIndex([][]segment{{{0, 10, 1}}, {{10, 5, 2}, {15, 1, 3}}}), int64(16), 1)
	f.Add(encodeIndex([][]segment{{}}), int64(0), 0)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f}, int64(100), 3)
	f.Fuzz(func(t *testing.T, index []byte, dataSize int64, reduceID int) {
		segs, size, err := locateBlock(bytes.NewReader(index), int64(len(index)), reduceID, dataSize)
		if err != nil {
			return
		}
		var sum int64
		for _, s := range segs {
			if s.off < 0 || s.len < 0 || s.off+s.len > dataSize {
				t.Fatalf("segment %+v outside the %d-byte data file", s, dataSize)
			}
			sum += s.len
		}
		if sum != size || size > dataSize {
			t.Fatalf("size %d, segments sum to %d, data file %d bytes", size, sum, dataSize)
		}
	})
}
