package parquetio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/drover-project/drover/internal/codec"
)

// Column is one field of the record type, in field order.
type Column struct {
	Name     string       // the Parquet column: the parquet tag's name, or the field's
	Kind     reflect.Kind // the field's kind (of the element, for a pointer)
	Optional bool         // a pointer field: nullable
	Bytes    bool         // a []byte field
	Skip     bool         // tag "-": not stored; read as the zero value
}

// Columns describes t's fields as Parquet columns. Only flat structs are
// supported: booleans, integers, floats, strings, []byte, and pointers to
// those (optional columns); any other field is an error naming it.
func Columns(t reflect.Type) ([]Column, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s is not a struct: Parquet records are structs", t)
	}
	var cols []Column
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "_" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("parquet"), ",")
		c := Column{Name: name, Skip: name == "-"}
		if c.Name == "" || c.Skip {
			c.Name = f.Name
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			c.Optional, ft = true, ft.Elem()
		}
		c.Kind = ft.Kind()
		switch {
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8:
			c.Bytes = true
		case ft.Kind() == reflect.Bool, ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64 && ft.Kind() != reflect.Uintptr,
			ft.Kind() == reflect.Float32, ft.Kind() == reflect.Float64, ft.Kind() == reflect.String:
		default:
			return nil, fmt.Errorf("field %s.%s: Parquet columns of type %s are not supported (flat structs of booleans, numbers, strings, []byte and pointers to them)", t, f.Name, f.Type)
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// node is the Parquet schema node of a column, as parquet-go's SchemaOf
// would write the field.
func (c Column) node() parquet.Node {
	var n parquet.Node
	switch {
	case c.Bytes:
		n = parquet.Leaf(parquet.ByteArrayType)
	case c.Kind == reflect.String:
		n = parquet.String()
	case c.Kind == reflect.Bool:
		n = parquet.Leaf(parquet.BooleanType)
	case c.Kind == reflect.Float32:
		n = parquet.Leaf(parquet.FloatType)
	case c.Kind == reflect.Float64:
		n = parquet.Leaf(parquet.DoubleType)
	case c.Kind >= reflect.Int && c.Kind <= reflect.Int64:
		n = parquet.Int(codec.IntBits(c.Kind))
	default:
		n = parquet.Uint(codec.IntBits(c.Kind))
	}
	if c.Optional {
		n = parquet.Optional(n)
	}
	return n
}

// Schema is the Parquet schema of the stored columns.
func Schema(cols []Column) *parquet.Schema {
	g := parquet.Group{}
	for _, c := range cols {
		if !c.Skip {
			g[c.Name] = c.node()
		}
	}
	return parquet.NewSchema("record", g)
}

// fileOptions read the footer only: page indexes and bloom filters would
// be extra reads that a full scan of a row group does not need.
var fileOptions = []parquet.FileOption{parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(64 << 10)}

// Open reads a file's footer. A read that fails (access denied, the
// network, an object changed since it was listed) is that error, not "not a
// Parquet file".
func Open(r io.ReaderAt, size int64) (*parquet.File, error) {
	rr := &recordingReaderAt{r: r}
	f, err := parquet.OpenFile(rr, size, fileOptions...)
	if err != nil {
		if rerr := rr.first(); rerr != nil {
			return nil, rerr
		}
		return nil, fmt.Errorf("not a Parquet file: %w", err)
	}
	return f, nil
}

// recordingReaderAt keeps the first error of its reader other than io.EOF.
type recordingReaderAt struct {
	r   io.ReaderAt
	mu  sync.Mutex
	err error
}

func (r *recordingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(p, off)
	if err != nil && err != io.EOF {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
	return n, err
}

func (r *recordingReaderAt) first() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// ReadRowGroup emits the records of row group rg of f, reading only the
// chunks of the columns cols stores.
func ReadRowGroup(f *parquet.File, rg int, cols []Column, emit func(rec []byte) error) error {
	groups := f.RowGroups()
	if rg < 0 || rg >= len(groups) {
		return fmt.Errorf("the file has %d row groups, not %d", len(groups), rg+1)
	}
	g := groups[rg]
	chunks := g.ColumnChunks()
	values := make([][]parquet.Value, len(cols))
	rows := int(g.NumRows())
	for i, c := range cols {
		if c.Skip {
			continue
		}
		leaf, ok := f.Schema().Lookup(c.Name)
		if !ok {
			continue // a column the file lacks reads as zero values
		}
		if leaf.MaxRepetitionLevel > 0 {
			return fmt.Errorf("column %s is repeated; only flat columns are supported", c.Name)
		}
		vs, err := readColumn(chunks[leaf.ColumnIndex], rows)
		if err != nil {
			return fmt.Errorf("column %s: %w", c.Name, err)
		}
		values[i] = vs
	}
	var rec []byte
	for r := range rows {
		rec = rec[:0]
		for i, c := range cols {
			var v parquet.Value // null: the zero value
			if values[i] != nil {
				v = values[i][r]
			}
			var err error
			if rec, err = appendValue(rec, c, v); err != nil {
				return fmt.Errorf("column %s, row %d: %w", c.Name, r, err)
			}
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
}

// ByteRange is a part of a file: Len bytes at Off.
type ByteRange struct{ Off, Len int64 }

// ChunkRanges is where the chunks that ReadRowGroup reads for cols lie in
// the file, in the order it reads them, for a reader that fetches each
// whole (an object store's).
func ChunkRanges(f *parquet.File, rg int, cols []Column) []ByteRange {
	groups := f.Metadata().RowGroups
	if rg < 0 || rg >= len(groups) {
		return nil
	}
	var out []ByteRange
	for _, c := range cols {
		if c.Skip {
			continue
		}
		leaf, ok := f.Schema().Lookup(c.Name)
		if !ok || leaf.ColumnIndex >= len(groups[rg].Columns) {
			continue
		}
		md := groups[rg].Columns[leaf.ColumnIndex].MetaData
		// A chunk starts with its dictionary page when it has one, and
		// its compressed size counts that page (as parquet-go reads it).
		off := md.DataPageOffset
		if md.DictionaryPageOffset != 0 {
			off = md.DictionaryPageOffset
		}
		out = append(out, ByteRange{Off: off, Len: md.TotalCompressedSize})
	}
	return out
}

func readColumn(chunk parquet.ColumnChunk, rows int) ([]parquet.Value, error) {
	pages := chunk.Pages()
	defer pages.Close()
	out := make([]parquet.Value, 0, rows)
	buf := make([]parquet.Value, 1024)
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		vr := p.Values()
		for {
			n, err := vr.ReadValues(buf)
			for _, v := range buf[:n] {
				out = append(out, v.Clone()) // the page's memory is released below
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(p)
				return nil, err
			}
		}
		parquet.Release(p)
	}
	if len(out) != rows {
		return nil, fmt.Errorf("%d values for %d rows", len(out), rows)
	}
	return out, nil
}

var errType = errors.New("the file's column type does not match the field")

// appendValue appends the encoding of v as the column's field.
func appendValue(b []byte, c Column, v parquet.Value) ([]byte, error) {
	if c.Optional {
		if v.IsNull() {
			return append(b, 0), nil
		}
		b = append(b, 1)
	}
	null := v.IsNull()
	switch {
	case c.Bytes || c.Kind == reflect.String:
		if null {
			return codec.AppendBytes(b, nil), nil
		}
		if v.Kind() != parquet.ByteArray && v.Kind() != parquet.FixedLenByteArray {
			return b, fmt.Errorf("%w: %s, not a byte array", errType, v.Kind())
		}
		return codec.AppendBytes(b, v.ByteArray()), nil
	case c.Kind == reflect.Bool:
		if !null && v.Kind() != parquet.Boolean {
			return b, fmt.Errorf("%w: %s, not a boolean", errType, v.Kind())
		}
		if !null && v.Boolean() {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case c.Kind == reflect.Float32 || c.Kind == reflect.Float64:
		var f float64
		switch {
		case null:
		case v.Kind() == parquet.Float:
			f = float64(v.Float())
		case v.Kind() == parquet.Double:
			f = v.Double()
		default:
			return b, fmt.Errorf("%w: %s, not a float", errType, v.Kind())
		}
		if c.Kind == reflect.Float32 {
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(f))), nil
		}
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(f)), nil
	default:
		var n int64
		switch {
		case null:
		case v.Kind() == parquet.Int32:
			n = int64(v.Int32())
			if c.Kind >= reflect.Uint {
				n = int64(uint32(v.Int32())) // unsigned logical type
			}
		case v.Kind() == parquet.Int64:
			n = v.Int64()
		default:
			return b, fmt.Errorf("%w: %s, not an integer", errType, v.Kind())
		}
		if c.Kind >= reflect.Uint {
			return binary.AppendUvarint(b, uint64(n)), nil
		}
		return binary.AppendVarint(b, n), nil
	}
}
