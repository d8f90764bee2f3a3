package eventlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The stream of "foobar\n" as snappy-java documents its format: header,
// the block's length, the block (a literal).
func TestSnappyWritesSnappyJavaFormat(t *testing.T) {
	var buf bytes.Buffer
	z := newSnappyWriter(&buf)
	if _, err := io.WriteString(z, "foobar\n"); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	want := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
		0, 0, 0, 9, 0x07, 0x18, 'f', 'o', 'o', 'b', 'a', 'r', '\n'}
	if diff := cmp.Diff(want, buf.Bytes()); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
}

// testdata/snappy-java/drover-1.snappy is the plain event log of
// sample(3000), compressed by snappy-java 1.1.8.3's SnappyOutputStream
// with Spark's block size (32 KiB), as Spark's snappy codec writes: it
// reads back whole. (drover's own logs were read by snappy-java's
// SnappyInputStream the other way round; docs/benchmarks-notes.md.)
func TestSnappyReadsSnappyJava(t *testing.T) {
	logs, err := List(context.Background(), "testdata/snappy-java", nil)
	if err != nil || len(logs) != 1 {
		t.Fatalf("List = %v, %v", logs, err)
	}
	got, st := replayAll(t, logs[0])
	if st.Truncated {
		t.Errorf("stats %+v: truncated", st)
	}
	if diff := cmp.Diff(sample(3000), got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestSnappyStreams(t *testing.T) {
	data := strings.Repeat(`{"Event":"TaskRows","Rows":[[1,2,3],[4,5,6]]}`+"\n", 5000) // several blocks
	one := snappyStream(t, []byte(data), len(data))
	two := append(snappyStream(t, []byte(data[:1000]), 300), snappyStream(t, []byte(data[1000:]), 1<<20)...)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
		err  error
	}{
		{"whole", one, data, nil},
		{"two streams one after the other", two, data, nil},
		{"empty file", nil, "", nil},
		{"header only", one[:len(snappyHeader)], "", nil},
		{"cut in the header", one[:9], "", io.ErrUnexpectedEOF},
		{"cut in a block", one[:len(one)-5], data[:len(data)-len(data)%snappyBlock], io.ErrUnexpectedEOF},
		{"cut in a length", one[:len(snappyHeader)+2], "", io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := io.ReadAll(newSnappyReader(bytes.NewReader(tc.in)))
			if !errors.Is(err, tc.err) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
			if string(got) != tc.want {
				t.Errorf("read %d bytes, want %d", len(got), len(tc.want))
			}
		})
	}
	if _, err := io.ReadAll(newSnappyReader(strings.NewReader("\x28\xb5\x2f\xfd not snappy at all"))); err == nil ||
		!strings.Contains(err.Error(), "not a snappy stream") {
		t.Errorf("a zstd file read as snappy: error %v, want it named not a snappy stream", err)
	}
	huge := append(bytes.Clone(snappyHeader), 0x7f, 0xff, 0xff, 0xff)
	if _, err := io.ReadAll(newSnappyReader(bytes.NewReader(huge))); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("a block of 2 GiB: error %v, want corrupt", err)
	}
}

// Any data, flushed anywhere, reads back as written; and no input makes
// the reader panic or hold more than a block's bound.
func FuzzSnappy(f *testing.F) {
	f.Add([]byte("foobar\n"), uint16(3))
	// Small seeds: the fuzzer minimizes each new input it finds
	// interesting, which takes minutes for one of 100 kB.
	f.Add(bytes.Repeat([]byte(`{"Event":"TaskRows"}`+"\n"), 50), uint16(100))
	f.Add(append(bytes.Clone(snappyHeader), 0, 0, 0, 9, 0x07, 0x18, 'f', 'o', 'o'), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, every uint16) {
		// data read as a stream: an error or some bytes, never a panic.
		_, _ = io.ReadAll(newSnappyReader(bytes.NewReader(data)))

		if every == 0 {
			every = math.MaxUint16
		}
		stream := snappyStream(t, data, int(every))
		got, err := io.ReadAll(newSnappyReader(bytes.NewReader(stream)))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, %v; wrote %d", len(got), err, len(data))
		}
	})
}

// snappyStream is data written through a snappyWriter, flushed after
// every flushEvery bytes, and closed.
func snappyStream(t *testing.T, data []byte, flushEvery int) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := newSnappyWriter(&buf)
	for rest := data; len(rest) > 0; {
		k := min(flushEvery, len(rest))
		if _, err := z.Write(rest[:k]); err != nil {
			t.Fatal(err)
		}
		if err := z.Flush(); err != nil {
			t.Fatal(err)
		}
		rest = rest[k:]
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
