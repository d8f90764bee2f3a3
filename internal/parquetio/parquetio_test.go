package parquetio

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"github.com/drover-project/drover/internal/codec"
)

type wide struct {
	ID    int64   `parquet:"id"`
	Name  string  `parquet:"name"`
	C2    string  `parquet:"c2"`
	C3    string  `parquet:"c3"`
	C4    string  `parquet:"c4"`
	C5    string  `parquet:"c5"`
	C6    float64 `parquet:"c6"`
	C7    []byte  `parquet:"c7"`
	C8    *int32  `parquet:"c8,optional"`
	Flag  bool    `parquet:"flag"`
	Small uint16  `parquet:"small"`
}

type narrow struct {
	ID   int64  `parquet:"id"`
	Name string `parquet:"name"`
}

func wideRows(n int) []wide {
	rows := make([]wide, n)
	for i := range rows {
		s := strings.Repeat(fmt.Sprint(i), 8)
		rows[i] = wide{ID: int64(i), Name: fmt.Sprint("n", i), C2: s + "2", C3: s + "3", C4: s + "4", C5: s + "5",
			C6: float64(i) / 3, C7: []byte(s), Flag: i%3 == 0, Small: uint16(i)}
		if i%2 == 0 {
			v := int32(-i)
			rows[i].C8 = &v
		}
	}
	return rows
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r *bytes.Reader
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

func encodeAll[T any](t *testing.T, rows []T) [][]byte {
	t.Helper()
	recs := make([][]byte, len(rows))
	for i, r := range rows {
		var err error
		if recs[i], err = codec.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

func writeFile[T any](t *testing.T, rows []T, codecName string) []byte {
	t.Helper()
	cols, err := Columns(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, cols, codecName)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range encodeAll(t, rows) {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll[T any](t *testing.T, ra interface {
	ReadAt([]byte, int64) (int, error)
}, size int64) []T {
	t.Helper()
	cols, err := Columns(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(ra, size)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for g := range f.RowGroups() {
		err := ReadRowGroup(f, g, cols, func(rec []byte) error {
			v, err := codec.Decode[T](rec)
			out = append(out, v)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestRoundTripAndProjection writes with each codec, reads back with
// parquet-go's own typed reader and with ReadRowGroup, and reads a
// 2-of-11-column projection that must read at most 30% of the file.
func TestRoundTripAndProjection(t *testing.T) {
	rows := wideRows(20000)
	for _, codecName := range []string{"snappy", "zstd", "uncompressed"} {
		t.Run(codecName, func(t *testing.T) {
			file := writeFile(t, rows, codecName)
			typed, err := parquet.Read[wide](bytes.NewReader(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(rows, typed); diff != "" {
				t.Errorf("parquet-go's reader (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(rows, readAll[wide](t, bytes.NewReader(file), int64(len(file)))); diff != "" {
				t.Errorf("read back (-want +got):\n%s", diff)
			}
			f, _ := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
			want := map[string]string{"snappy": "SNAPPY", "zstd": "ZSTD", "uncompressed": "UNCOMPRESSED"}[codecName]
			if got := f.Metadata().RowGroups[0].Columns[0].MetaData.Codec.String(); got != want {
				t.Errorf("codec %s, want %s", got, want)
			}
			counter := &countingReaderAt{r: bytes.NewReader(file)}
			got := readAll[narrow](t, counter, int64(len(file)))
			wantNarrow := make([]narrow, len(rows))
			for i, r := range rows {
				wantNarrow[i] = narrow{ID: r.ID, Name: r.Name}
			}
			if diff := cmp.Diff(wantNarrow, got); diff != "" {
				t.Errorf("projection (-want +got):\n%s", diff)
			}
			// The chunks ChunkRanges names are the bytes the projection
			// reads, bar the footer.
			var chunks int64
			for g := range f.RowGroups() {
				for _, c := range ChunkRanges(f, g, mustColumns[narrow](t)) {
					chunks += c.Len
				}
			}
			if read := counter.n.Load(); read < chunks || read > chunks+int64(len(file))/50 {
				t.Errorf("the projection read %d bytes; its chunks hold %d", read, chunks)
			}
			share := float64(counter.n.Load()) / float64(len(file))
			t.Logf("%s: a 2-of-11-column read read %d of %d bytes (%.1f%%)", codecName, counter.n.Load(), len(file), 100*share)
			if share > 0.30 {
				t.Errorf("a 2-of-11-column read read %.1f%% of the file, want ≤ 30%%", 100*share)
			}
		})
	}
}

func mustColumns[T any](t *testing.T) []Column {
	t.Helper()
	cols, err := Columns(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	return cols
}

// TestWriterDoesNotKeepRecords: a task's pipeline encodes every record
// into the same memory, so the writer must copy what it batches; before it
// did, strings and bytes of a batch of rows all read as its last row's.
func TestWriterDoesNotKeepRecords(t *testing.T) {
	rows := wideRows(3000)
	cols, err := Columns(reflect.TypeFor[wide]())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, cols, "snappy")
	if err != nil {
		t.Fatal(err)
	}
	var rec []byte
	for _, r := range rows {
		enc, err := codec.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		rec = append(rec[:0], enc...)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		clear(rec) // as the next record overwrites it
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := parquet.Read[wide](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rows, got); diff != "" {
		t.Errorf("rows written from one reused buffer (-want +got):\n%s", diff)
	}
}

// TestReadsParquetGoFiles reads a file parquet-go's typed writer wrote, in
// several row groups.
func TestReadsParquetGoFiles(t *testing.T) {
	rows := wideRows(5000)
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[wide](&buf, parquet.MaxRowsPerRowGroup(1000))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.RowGroups()); n != 5 {
		t.Errorf("%d row groups, want 5", n)
	}
	if diff := cmp.Diff(rows, readAll[wide](t, bytes.NewReader(buf.Bytes()), int64(buf.Len()))); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := Open(bytes.NewReader([]byte("not parquet at all")), 18); err == nil || !strings.Contains(err.Error(), "not a Parquet file") {
		t.Errorf("opening text: %v, want 'not a Parquet file'", err)
	}
	// A file that cannot be read is that error, not a file of the wrong kind.
	denied := errors.New("reading s3://b/k: AccessDenied: no, you may not")
	if _, err := Open(failingReaderAt{denied}, 1000); !errors.Is(err, denied) || strings.Contains(err.Error(), "not a Parquet file") {
		t.Errorf("opening a file whose reads fail: %v, want the read's error alone", err)
	}
	type nested struct {
		ID   int
		Tags []string
	}
	if _, err := Columns(reflect.TypeFor[nested]()); err == nil || !strings.Contains(err.Error(), "field parquetio.nested.Tags") {
		t.Errorf("Columns of a struct with a list: %v, want an error naming the field", err)
	}
}

// failingReaderAt fails every read with err.
type failingReaderAt struct{ err error }

func (f failingReaderAt) ReadAt([]byte, int64) (int, error) { return 0, f.err }
