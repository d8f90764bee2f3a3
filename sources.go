package drover

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/inputsplit"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/parquetio"
)

// Parallelize distributes data over numSlices partitions (the default
// parallelism when numSlices ≤ 0).
func Parallelize[T any](c *Context, data []T, numSlices int) *Dataset[T] {
	if err := codec.Check[T](); err != nil {
		return failed[T](c, fmt.Errorf("parallelize: %w", err))
	}
	n := c.partitions(numSlices)
	enc := codec.EncoderFor[T]()
	parts := make([][]byte, n)
	var rec []byte
	for i := range n {
		lo, hi := len(data)*i/n, len(data)*(i+1)/n
		for _, v := range data[lo:hi] {
			rec = enc(rec[:0], v)
			parts[i] = dataflow.AppendFramed(parts[i], rec)
		}
	}
	return newDataset[T](c, dataflow.Node{Kind: dataflow.Parallelize, NumPartitions: n}, parts)
}

// Range is the int64s from start (inclusive) to end (exclusive) by step,
// in numSlices partitions (the default parallelism when ≤ 0).
func Range(c *Context, start, end, step int64, numSlices int) *Dataset[int64] {
	if step == 0 {
		return failed[int64](c, errors.New("range: step must not be 0"))
	}
	return newDataset[int64](c, dataflow.Node{Kind: dataflow.Range, Start: start, End: end, Step: step,
		NumPartitions: c.partitions(numSlices)}, nil)
}

// TextFile is the lines of the files that path names: a file, a directory
// (its files, except hidden ones: names starting with . or _) or a glob
// pattern (hidden names left out unless its last part is one). Files are split into
// partitions of at most spark.files.maxPartitionBytes, and fewer bytes when
// that gives every core a share. Files named *.gz (gzip) or *.zst (zstd)
// are decompressed as they are read, each in one partition. Local files must be readable at the same
// path by every executor. An s3:// or s3a:// path (objstore; configured by
// spark.hadoop.fs.s3a.*) is listed by the driver, and each executor reads
// its splits from the store with ranged GETs.
func TextFile(c *Context, path string) *Dataset[string] {
	splits, err := lineSplits(c, path)
	if err != nil {
		return failed[string](c, fmt.Errorf("text file: %w", err))
	}
	return newDataset[string](c, dataflow.Node{Kind: dataflow.TextFile, Splits: splits, NumPartitions: len(splits)}, nil)
}

// ReadJSONLines is the records of the JSON lines files that path names (as
// TextFile names and splits them): each line that is not blank holds one
// JSON value of T, read as json.Unmarshal reads it (json tags, unknown keys
// ignored, missing fields zero). Executors read JSON with T's schema, so
// the types encoding/json treats through methods (json.Marshaler,
// encoding.TextMarshaler such as time.Time), embedded structs and ,string
// tags are not supported: the dataset's actions return an error naming the
// field. A line that is not T's JSON fails the task with its file's path.
func ReadJSONLines[T any](c *Context, path string) *Dataset[T] {
	schema, err := codec.JSONSchemaOf(reflect.TypeFor[T]())
	if err != nil {
		return failed[T](c, fmt.Errorf("read JSON lines %s: %w", path, err))
	}
	splits, err := lineSplits(c, path)
	if err != nil {
		return failed[T](c, fmt.Errorf("read JSON lines: %w", err))
	}
	return newDataset[T](c, dataflow.Node{Kind: dataflow.TextFile, Format: dataflow.JSONLines, Schema: schema,
		Splits: splits, NumPartitions: len(splits)}, nil)
}

// ReadParquet is the records of the Parquet files that path names (a
// file, a directory or a glob, as for TextFile, on local paths or s3://),
// one partition per row group. T is a flat struct: its fields are
// booleans, numbers, strings, []byte or pointers to them (optional
// columns), named by parquet tags (`parquet:"name"`) or their field names.
// Only T's columns are read: the driver reads each file's footer to plan,
// and a task reads just its row group's chunks of those columns (ranged
// GETs on S3). A column T has and a file lacks reads as zero values.
func ReadParquet[T any](c *Context, path string) *Dataset[T] {
	cols, err := parquetio.Columns(reflect.TypeFor[T]())
	if err != nil {
		return failed[T](c, fmt.Errorf("read Parquet %s: %w", path, err))
	}
	var store *objstore.Store
	if objstore.HasScheme(path) {
		store = c.d.Store()
	}
	files, err := inputsplit.Files(c, path, store)
	if err != nil {
		return failed[T](c, fmt.Errorf("read Parquet: %w", err))
	}
	splits, err := inputsplit.RowGroups(c, files, store)
	if err != nil {
		return failed[T](c, fmt.Errorf("read Parquet %w", err))
	}
	return newDataset[T](c, dataflow.Node{Kind: dataflow.TextFile, Format: dataflow.Parquet, Columns: cols,
		Splits: splits, NumPartitions: len(splits)}, nil)
}

// lineSplits lists the files of path and cuts them into byte ranges whose
// lines each split reads (see TextFile; internal/inputsplit).
func lineSplits(c *Context, path string) ([]dataflow.FileSplit, error) {
	opts := inputsplit.Options{MaxPartitionBytes: config.FilesMaxPartitionBytes.Get(c.conf), Parallelism: c.DefaultParallelism()}
	if objstore.HasScheme(path) {
		opts.Store = c.d.Store()
	}
	return inputsplit.Lines(c, path, opts)
}
