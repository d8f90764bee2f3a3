package parquetio

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	arrowpq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/go-cmp/cmp"
)

// sale is the record of the interop tests: the column types drover
// supports, one of them optional.
type sale struct {
	ID     int64    `parquet:"id"`
	Region string   `parquet:"region"`
	Amount float64  `parquet:"amount"`
	Units  int32    `parquet:"units"`
	OK     bool     `parquet:"ok"`
	Rate   *float32 `parquet:"rate,optional"`
}

func sales(n int) []sale {
	out := make([]sale, n)
	for i := range out {
		out[i] = sale{ID: int64(i), Region: fmt.Sprint("r", i%7), Amount: float64(i) * 1.25, Units: int32(i % 13), OK: i%2 == 0}
		if i%3 == 0 {
			r := float32(i) / 8
			out[i].Rate = &r
		}
	}
	return out
}

// TestArrowReadsDroverFiles: apache/arrow-go's Parquet reader, an
// implementation independent of parquet-go, reads the files drover writes
// with each codec.
func TestArrowReadsDroverFiles(t *testing.T) {
	want := sales(3000)
	for _, codecName := range []string{"snappy", "zstd", "gzip", "uncompressed"} {
		t.Run(codecName, func(t *testing.T) {
			file := writeFile(t, want, codecName)
			tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(file), arrowpq.NewReaderProperties(memory.DefaultAllocator),
				pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Release()
			got := make([]sale, tbl.NumRows())
			columns := map[string]func(arrow.Array, int, *sale){
				"id":     func(a arrow.Array, j int, s *sale) { s.ID = a.(*array.Int64).Value(j) },
				"region": func(a arrow.Array, j int, s *sale) { s.Region = a.(*array.String).Value(j) },
				"amount": func(a arrow.Array, j int, s *sale) { s.Amount = a.(*array.Float64).Value(j) },
				"units":  func(a arrow.Array, j int, s *sale) { s.Units = a.(*array.Int32).Value(j) },
				"ok":     func(a arrow.Array, j int, s *sale) { s.OK = a.(*array.Boolean).Value(j) },
				"rate": func(a arrow.Array, j int, s *sale) {
					if a.IsValid(j) {
						v := a.(*array.Float32).Value(j)
						s.Rate = &v
					}
				},
			}
			for c := range int(tbl.NumCols()) {
				col := tbl.Column(c)
				set, ok := columns[col.Name()]
				if !ok {
					t.Fatalf("unexpected column %s", col.Name())
				}
				row := 0
				for _, chunk := range col.Data().Chunks() {
					for j := range chunk.Len() {
						set(chunk, j, &got[row])
						row++
					}
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("arrow-go's reading of drover's file (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadsArrowFiles: drover reads a file arrow-go writes (zstd, several
// row groups), whole and projected.
func TestReadsArrowFiles(t *testing.T) {
	want := sales(5000)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "region", Type: arrow.BinaryTypes.String},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
		{Name: "units", Type: arrow.PrimitiveTypes.Int32},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "rate", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, s := range want {
		b.Field(0).(*array.Int64Builder).Append(s.ID)
		b.Field(1).(*array.StringBuilder).Append(s.Region)
		b.Field(2).(*array.Float64Builder).Append(s.Amount)
		b.Field(3).(*array.Int32Builder).Append(s.Units)
		b.Field(4).(*array.BooleanBuilder).Append(s.OK)
		if s.Rate != nil {
			b.Field(5).(*array.Float32Builder).Append(*s.Rate)
		} else {
			b.Field(5).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := arrowpq.NewWriterProperties(arrowpq.WithCompression(compress.Codecs.Zstd))
	if err := pqarrow.WriteTable(tbl, &buf, 1000, props, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	f, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.RowGroups()); n != 5 {
		t.Errorf("%d row groups, want 5", n)
	}
	if diff := cmp.Diff(want, readAll[sale](t, bytes.NewReader(buf.Bytes()), int64(buf.Len()))); diff != "" {
		t.Errorf("drover's reading of arrow-go's file (-want +got):\n%s", diff)
	}
	type idRate struct {
		ID   int64    `parquet:"id"`
		Rate *float32 `parquet:"rate,optional"`
	}
	wantProj := make([]idRate, len(want))
	for i, s := range want {
		wantProj[i] = idRate{s.ID, s.Rate}
	}
	if diff := cmp.Diff(wantProj, readAll[idRate](t, bytes.NewReader(buf.Bytes()), int64(buf.Len()))); diff != "" {
		t.Errorf("projection of arrow-go's file (-want +got):\n%s", diff)
	}
}
