package parquetio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/drover-project/drover/internal/codec"
)

// Codecs are the compression codecs SaveAsParquet offers, by Spark's names
// (spark.sql.parquet.compression.codec).
var Codecs = map[string]compress.Codec{
	"uncompressed": &parquet.Uncompressed,
	"snappy":       &parquet.Snappy,
	"gzip":         &parquet.Gzip,
	"zstd":         &parquet.Zstd,
	"lz4":          &parquet.Lz4Raw,
}

// Writer writes records as a Parquet file.
type Writer struct {
	cols  []Column
	index []int                       // the Parquet column index of each column (the schema orders them by name)
	w     *parquet.GenericWriter[any] // rows only: the schema is built from cols, not a Go type
	rows  []parquet.Row
	// batch holds copies of the batched records: byte-array values point
	// into their record, and a caller may reuse a record's memory once
	// Write returns (a task's pipeline does).
	batch []byte
}

// NewWriter writes a Parquet file of the columns to out, compressed with
// the codec named codecName.
func NewWriter(out io.Writer, cols []Column, codecName string) (*Writer, error) {
	c, ok := Codecs[codecName]
	if !ok {
		return nil, fmt.Errorf("unknown Parquet compression codec %q", codecName)
	}
	schema := Schema(cols)
	w := &Writer{cols: cols, index: make([]int, len(cols)),
		w: parquet.NewGenericWriter[any](out, schema, parquet.Compression(c))}
	for i, col := range cols {
		w.index[i] = -1
		if !col.Skip {
			leaf, _ := schema.Lookup(col.Name)
			w.index[i] = leaf.ColumnIndex
		}
	}
	return w, nil
}

// Write adds one encoded record. Rows are written in batches; rec is not
// kept.
func (w *Writer) Write(rec []byte) error {
	// Appending may move batch, but the rows already made keep pointing
	// at the old array, which nothing writes again.
	start := len(w.batch)
	w.batch = append(w.batch, rec...)
	rec = w.batch[start:len(w.batch):len(w.batch)]
	row := make(parquet.Row, 0, len(w.cols))
	for i, c := range w.cols {
		var v parquet.Value
		var err error
		if v, rec, err = readValue(rec, c); err != nil {
			return fmt.Errorf("column %s: %w", c.Name, err)
		}
		if w.index[i] < 0 {
			continue
		}
		def := 0
		if c.Optional && !v.IsNull() {
			def = 1
		}
		row = append(row, v.Level(0, def, w.index[i]))
	}
	// parquet-go wants a row's values in column order.
	sortByColumn(row)
	w.rows = append(w.rows, row)
	if len(w.rows) == 1024 {
		return w.flushRows()
	}
	return nil
}

func sortByColumn(row parquet.Row) {
	for i := 1; i < len(row); i++ {
		for j := i; j > 0 && row[j].Column() < row[j-1].Column(); j-- {
			row[j], row[j-1] = row[j-1], row[j]
		}
	}
}

func (w *Writer) flushRows() error {
	// WriteRows copies the values into the column buffers: the batch's
	// memory can be written again after it.
	_, err := w.w.WriteRows(w.rows)
	w.rows = w.rows[:0]
	w.batch = w.batch[:0]
	return err
}

// Close writes the remaining rows and the footer.
func (w *Writer) Close() error {
	if err := w.flushRows(); err != nil {
		return err
	}
	return w.w.Close()
}

// readValue decodes the column's field from the front of rec.
func readValue(rec []byte, c Column) (parquet.Value, []byte, error) {
	if c.Optional {
		if len(rec) < 1 {
			return parquet.Value{}, rec, errShort
		}
		if rec[0] == 0 {
			return parquet.Value{}, rec[1:], nil
		}
		rec = rec[1:]
	}
	switch {
	case c.Bytes || c.Kind == reflect.String:
		b, rest, err := codec.ReadBytesView(rec)
		return parquet.ByteArrayValue(b), rest, err
	case c.Kind == reflect.Bool:
		if len(rec) < 1 {
			return parquet.Value{}, rec, errShort
		}
		return parquet.BooleanValue(rec[0] != 0), rec[1:], nil
	case c.Kind == reflect.Float32:
		if len(rec) < 4 {
			return parquet.Value{}, rec, errShort
		}
		return parquet.FloatValue(math.Float32frombits(binary.LittleEndian.Uint32(rec))), rec[4:], nil
	case c.Kind == reflect.Float64:
		if len(rec) < 8 {
			return parquet.Value{}, rec, errShort
		}
		return parquet.DoubleValue(math.Float64frombits(binary.LittleEndian.Uint64(rec))), rec[8:], nil
	case c.Kind >= reflect.Uint:
		n, k := binary.Uvarint(rec)
		if k <= 0 {
			return parquet.Value{}, rec, errShort
		}
		if codec.IntBits(c.Kind) <= 32 {
			return parquet.Int32Value(int32(uint32(n))), rec[k:], nil
		}
		return parquet.Int64Value(int64(n)), rec[k:], nil
	default:
		n, k := binary.Varint(rec)
		if k <= 0 {
			return parquet.Value{}, rec, errShort
		}
		if codec.IntBits(c.Kind) <= 32 {
			return parquet.Int32Value(int32(n)), rec[k:], nil
		}
		return parquet.Int64Value(n), rec[k:], nil
	}
}

var errShort = errors.New("malformed record")
