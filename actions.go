package drover

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/commit"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/parquetio"
)

// run runs an action over some partitions of the dataset.
func (d *Dataset[T]) run(out dataflow.Output, partitions []int, onResult func(p int, b []byte) error) error {
	if d.err != nil {
		return d.err
	}
	// The dataset must outlive its job: its cleanup would drop the graph
	// nodes the job runs.
	defer runtime.KeepAlive(d)
	return d.c.job(func(ctx context.Context) error {
		return d.c.graph.Run(ctx, d.id, out, partitions, onResult)
	})
}

// decodeFramed appends the records of a result block to out.
func decodeFramed[T any](out []T, b []byte) ([]T, error) {
	dec := codec.DecoderFor[T]()
	err := dataflow.ForEachFramed(b, func(rec []byte) error {
		v, _, err := dec(rec)
		if err != nil {
			return fmt.Errorf("decoding a result record: %w", err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// Collect returns every record, in partition order.
func (d *Dataset[T]) Collect() ([]T, error) {
	parts := make([][]byte, d.parts)
	err := d.run(dataflow.Output{Kind: dataflow.Collect}, seq(d.parts), func(p int, b []byte) error {
		parts[p] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []T
	for _, b := range parts {
		if out, err = decodeFramed(out, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Count returns the number of records.
func (d *Dataset[T]) Count() (int64, error) {
	var total int64
	dec := codec.DecoderFor[int64]()
	err := d.run(dataflow.Output{Kind: dataflow.Count}, seq(d.parts), func(_ int, b []byte) error {
		n, _, err := dec(b)
		total += n
		return err
	})
	return total, err
}

// Take returns the first n records. Like Spark, it reads one partition
// first and then four times more partitions per round until it has n.
func (d *Dataset[T]) Take(n int) ([]T, error) {
	if d.err != nil {
		return nil, d.err
	}
	var out []T
	for next, batch := 0, 1; len(out) < n && next < d.parts; batch *= 4 {
		ps := seq(min(batch, d.parts-next))
		for i := range ps {
			ps[i] += next
		}
		parts := make(map[int][]byte, len(ps))
		err := d.run(dataflow.Output{Kind: dataflow.Collect, Limit: n - len(out)}, ps, func(p int, b []byte) error {
			parts[p] = b
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if out, err = decodeFramed(out, parts[p]); err != nil {
				return nil, err
			}
		}
		next += len(ps)
	}
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

// ErrEmpty is returned by Reduce on a dataset without records.
var ErrEmpty = errors.New("empty dataset")

// Reduce merges all records with f: within partitions on the executors,
// then the partitions' results on the driver.
func (d *Dataset[T]) Reduce(f *ReduceFunc[T]) (T, error) {
	var acc T
	if f.err != nil {
		return acc, f.err
	}
	seen := false
	dec := codec.DecoderFor[T]()
	err := d.run(dataflow.Output{Kind: dataflow.ReduceAll, Fn: f.name}, seq(d.parts), func(_ int, b []byte) error {
		if len(b) == 0 {
			return nil
		}
		v, _, err := dec(b)
		if err != nil {
			return fmt.Errorf("decoding a partial reduction: %w", err)
		}
		if seen {
			acc = f.f(acc, v)
		} else {
			acc, seen = v, true
		}
		return nil
	})
	if err == nil && !seen {
		err = ErrEmpty
	}
	return acc, err
}

// Foreach calls f on every record, on the executors.
func (d *Dataset[T]) Foreach(f *ForeachFunc[T]) error {
	if f.err != nil {
		return f.err
	}
	return d.run(dataflow.Output{Kind: dataflow.Foreach, Fn: f.name}, seq(d.parts), func(int, []byte) error { return nil })
}

// SaveAsTextFile writes the records as lines of text, one file per
// partition (part-00000, …) and an empty _SUCCESS marker, into the
// directory dir, which must not exist. Strings are written as they are,
// other records as fmt's %v prints them. The output appears at once when
// the job succeeds (tasks write into a hidden sibling directory that is
// renamed in the end); a failed job leaves nothing behind. Executors must
// see the same file system path as the driver.
//
// dir may be an s3:// or s3a:// prefix (objstore), which must hold no
// object yet. A store has no rename: each task attempt uploads its part to
// its final key as a multipart upload it leaves open, and once every
// partition has a successful attempt the driver completes those uploads
// (only the winning attempt's) and writes _SUCCESS last. A failed job
// leaves no object under dir; until _SUCCESS exists, dir holds a _PENDING
// marker and TextFile refuses to read it. See docs/storage.md for what a
// killed driver leaves and how to remove it.
func (d *Dataset[T]) SaveAsTextFile(dir string) (err error) {
	if d.err != nil {
		return d.err
	}
	out := dataflow.Output{Kind: dataflow.SaveText}
	if t := reflect.TypeFor[T](); t.Kind() == reflect.String {
		out.Text = true
	} else if out.Schema, err = codec.SchemaOf(t); err != nil {
		return fmt.Errorf("save as text file: records of type %s cannot be written as text (%w); map them to strings first", t, err)
	}
	return d.save(out, dir, "save as text file")
}

// save runs a job whose tasks write their partitions with out (a SaveText
// output) and commits the files of the successful attempts into dir,
// atomically as SaveAsTextFile describes (internal/commit); errors start
// with action.
func (d *Dataset[T]) save(out dataflow.Output, dir, action string) error {
	var store *objstore.Store
	if objstore.HasScheme(dir) {
		store = d.c.d.Store()
	}
	run := func(out dataflow.Output, onResult func(p int, b []byte) error) error {
		return d.run(out, seq(d.parts), onResult)
	}
	// A driver that may restart names what it commits by lineage, so
	// that a later attempt finds the output done and leaves it.
	lineage, err := d.c.graph.OutputLineage(d.id, out)
	if err != nil {
		return fmt.Errorf("%s %s: %w", action, dir, err)
	}
	attempt := d.c.d.Attempt()
	return commit.Save(d.c, dir, store, out, run, commit.Options{Action: action, AppID: d.c.appID, Partitions: d.parts,
		AtStop: d.c.d.AtStop, Hook: d.c.commitHook, Logger: d.c.log,
		Lineage: lineage, Attempt: attempt.Epoch, Fence: attempt.Fence})
}

// SaveAsJSONLines writes the records as JSON lines, one value per line as
// json.Marshal writes it (json tags honoured), one file per partition
// (part-00000.json, …) and _SUCCESS, into dir: a local directory or an
// s3:// prefix, committed atomically as SaveAsTextFile is. The types
// ReadJSONLines cannot read are an error here too, before any task runs.
func (d *Dataset[T]) SaveAsJSONLines(dir string) error {
	if d.err != nil {
		return d.err
	}
	schema, err := codec.JSONSchemaOf(reflect.TypeFor[T]())
	if err != nil {
		return fmt.Errorf("save as JSON lines %s: %w", dir, err)
	}
	return d.save(dataflow.Output{Kind: dataflow.SaveText, Format: dataflow.JSONLines, Schema: schema, Ext: ".json"},
		dir, "save as JSON lines")
}

// SaveAsParquet writes the records, flat structs as ReadParquet reads
// them, as Parquet files, one per partition (part-00000.parquet, …) and
// _SUCCESS, into dir: a local directory or an s3:// prefix, committed
// atomically as SaveAsTextFile is. Pages are compressed with
// spark.sql.parquet.compression.codec (snappy by default; zstd, gzip, lz4,
// uncompressed).
func (d *Dataset[T]) SaveAsParquet(dir string) error {
	if d.err != nil {
		return d.err
	}
	cols, err := parquetio.Columns(reflect.TypeFor[T]())
	if err != nil {
		return fmt.Errorf("save as Parquet %s: %w", dir, err)
	}
	return d.save(dataflow.Output{Kind: dataflow.SaveText, Format: dataflow.Parquet, Columns: cols, Ext: ".parquet",
		Codec: config.ParquetCompressionCodec.Get(d.c.conf)}, dir, "save as Parquet")
}
