package dataflow

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/objstore"
)

// output runs the pipeline into the stage's output.
func (r *runner) output(p Producer) ([]byte, error) {
	o := r.stage.Output
	switch o.Kind {
	case WriteShuffle:
		return r.writeShuffle(p)
	case Collect:
		var out []byte
		n := 0
		err := p(func(rec []byte) error {
			out = AppendFramed(out, rec)
			if n++; o.Limit > 0 && n >= o.Limit {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			return nil, err
		}
		return out, nil
	case Count:
		var n int64
		if err := p(func([]byte) error { n++; return nil }); err != nil {
			return nil, err
		}
		return binary.AppendVarint(nil, n), nil
	case ReduceAll, Foreach:
		f, err := lookup(o.Fn)
		if err != nil {
			return nil, err
		}
		var sink Sink
		if o.Kind == ReduceAll && f.Reduce != nil {
			sink = f.Reduce(r.ctx)
		} else if o.Kind == Foreach && f.Foreach != nil {
			sink = f.Foreach(r.ctx, r.ft)
		}
		if sink == nil {
			return nil, fmt.Errorf("function %q cannot be used for this action", o.Fn)
		}
		if err := p(sink.Add); err != nil {
			return nil, err
		}
		return sink.Result()
	case SaveText:
		return r.saveText(p)
	case SampleKeys:
		return sampleKeys(p, o.SampleSize, int64(r.task.Partition))
	}
	return nil, fmt.Errorf("unknown output kind %d", o.Kind)
}

// saveText writes the partition and returns what the driver commits once
// every partition is written: into a local directory, a file named for the
// task attempt, and its name; into an s3:// prefix, a pending upload to the
// part's final key (objstore.Pending, as JSON), which only the driver's
// commit makes visible, and only for the attempt whose result it takes.
func (r *runner) saveText(p Producer) ([]byte, error) {
	o := r.stage.Output
	f, err := r.createPart(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("saving partition %d: %w", r.task.Partition, err)
	}
	w := countingWriter{f.w, &r.m.OutputBytes}
	p = countRecords(p, &r.m.OutputRecords)
	if o.Format == Parquet {
		err = writeParquet(w, p, o.Columns, o.Codec)
	} else {
		err = writeLines(w, p, o)
	}
	var result []byte
	if err == nil {
		result, err = f.finish()
	}
	if err != nil {
		f.discard()
		return nil, fmt.Errorf("saving partition %d: %w", r.task.Partition, err)
	}
	return result, nil
}

// writeLines writes the partition's records to f, one line each: as text,
// JSON or formatted by their schema.
func writeLines(f io.Writer, p Producer, o Output) error {
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	err := p(func(rec []byte) error {
		var err error
		switch {
		case o.Text:
			line, _, err = codec.ReadBytesView(rec)
		case o.Format == JSONLines:
			line, _, err = o.Schema.AppendJSON(line[:0], rec)
		default:
			line, _, err = o.Schema.Format(line[:0], rec)
		}
		if err != nil {
			return fmt.Errorf("formatting record: %w", err)
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		return w.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	return w.Flush()
}

// part is a partition's output being written.
type part struct {
	w       io.Writer
	finish  func() ([]byte, error) // ends the writing; the task's result
	discard func()                 // drops what was written, after a failure
}

// createPart creates the partition's output in dir, a local directory or
// an s3:// prefix.
func (r *runner) createPart(dir string) (part, error) {
	if !objstore.HasScheme(dir) {
		name := fmt.Sprintf("part-%05d-attempt-%d", r.task.Partition, r.ft.TaskID)
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return part{}, err
		}
		return part{w: f,
			finish:  func() ([]byte, error) { return []byte(name), f.Close() },
			discard: func() { f.Close(); os.Remove(path) }}, nil
	}
	u, err := storeObject("writing", dir, r.ft.Store)
	if err != nil {
		return part{}, err
	}
	// The final key, not one per attempt: attempts differ by their upload
	// ids, and the object appears only when the driver completes one.
	w, err := r.ft.Store.Create(r.ctx, u.Join(fmt.Sprintf("part-%05d%s", r.task.Partition, r.stage.Output.Ext)))
	if err != nil {
		return part{}, err
	}
	return part{w: w,
		finish: func() ([]byte, error) {
			p, err := w.Stage()
			if err != nil {
				return nil, err
			}
			return json.Marshal(p)
		},
		discard: w.Abort}, nil
}

// sampleKeys keeps a uniform sample of the partition's keys (reservoir
// sampling) for a range partitioner, with the partition's record count.
func sampleKeys(p Producer, size int, seed int64) ([]byte, error) {
	var keys [][]byte
	var n int64
	rnd := seed*6364136223846793005 + 1442695040888963407
	err := forEachPair(p, func(key, _ []byte) error {
		n++
		if len(keys) < size {
			keys = append(keys, append([]byte(nil), key...))
			return nil
		}
		rnd = rnd*6364136223846793005 + 1442695040888963407
		if j := uint64(rnd>>1) % uint64(n); j < uint64(size) {
			keys[j] = append(keys[j][:0], key...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := binary.AppendVarint(nil, n)
	for _, k := range keys {
		out = AppendFramed(out, k)
	}
	return out, nil
}
