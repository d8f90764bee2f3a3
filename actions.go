package drover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/codec"
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
// atomically as SaveAsTextFile describes; errors start with action.
func (d *Dataset[T]) save(out dataflow.Output, dir, action string) (err error) {
	if objstore.HasScheme(dir) {
		if err := d.saveToStore(out, dir); err != nil {
			return fmt.Errorf("%s: %w", action, err)
		}
		return nil
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("%s: output directory %s already exists", action, dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	staging := filepath.Join(filepath.Dir(dir), stagingName(filepath.Base(dir)))
	attempts := filepath.Join(staging, "_temporary")
	if err := os.MkdirAll(attempts, 0o755); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(staging)
		}
	}()
	out.Dir = attempts
	names := make([]string, d.parts)
	err = d.run(out, seq(d.parts), func(p int, b []byte) error {
		names[p] = string(b)
		return nil
	})
	if err != nil {
		return err
	}
	if err := commitParts(attempts, staging, names, out.Ext); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	if err := os.RemoveAll(attempts); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	if err := os.WriteFile(filepath.Join(staging, "_SUCCESS"), nil, 0o644); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	if err := os.Rename(staging, dir); err != nil {
		return fmt.Errorf("%s: committing %s: %w", action, dir, err)
	}
	return nil
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

// commitParts moves each partition's file, named by its task's result, from
// attempts into staging as part-NNNNN (and ext). The names come from executors, so
// each must be a plain file name in attempts: a path (such as ../x) would
// move a file of the driver's choosing.
func commitParts(attempts, staging string, names []string, ext string) error {
	if err := checkPartNames(names); err != nil {
		return err
	}
	for p, name := range names {
		if err := os.Rename(filepath.Join(attempts, name), filepath.Join(staging, fmt.Sprintf("part-%05d%s", p, ext))); err != nil {
			return fmt.Errorf("committing partition %d: %w", p, err)
		}
	}
	return nil
}

// checkPartNames checks that each name a task returned is a plain file name.
func checkPartNames(names []string) error {
	for p, name := range names {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			return fmt.Errorf("partition %d: its task named the file %q, not a file name in the output's temporary directory", p, name)
		}
	}
	return nil
}

// stagingName is the hidden sibling of output base where a job's tasks
// write: hidden, so no glob or directory listing of the parent reads it.
func stagingName(base string) string {
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	return "." + base + ".drover-" + hex.EncodeToString(suffix)
}

// commitParallelism bounds the uploads a job's commit completes at once:
// each is one short request, and a store throttles a burst.
const commitParallelism = 16

// testHookStoreCommit, when set, is called before the commit and after each
// part the commit completes, with how many are complete; an error stops the
// commit there. errDriverKilled stops it without any clean-up, as a
// killed driver would.
var testHookStoreCommit func(completed int) error

var errDriverKilled = errors.New("driver killed (test)")

// saveToStore is SaveAsTextFile into an object store: a commit of pending
// multipart uploads, as Hadoop's S3A magic committer does (docs/storage.md).
// The driver writes dir/_PENDING; each task attempt uploads its part to its
// final key and leaves the upload open, returning its id; once every
// partition has a successful attempt, the driver completes the winning
// uploads, writes _SUCCESS, aborts every other upload under dir/ (failed
// and duplicate attempts) and deletes _PENDING. Until _SUCCESS, a reader of
// dir (List) refuses it; a failed job removes everything under dir/.
func (d *Dataset[T]) saveToStore(out dataflow.Output, dir string) (err error) {
	u, err := objstore.Parse(dir)
	if err != nil {
		return err
	}
	u.Key = strings.TrimSuffix(u.Key, "/")
	if u.Key == "" {
		return fmt.Errorf("output %s: name a prefix in the bucket, not the bucket itself", dir)
	}
	ctx := d.c
	store := objstore.New(objstore.ConfigFrom(d.c.conf))
	switch exists, err := store.Exists(ctx, u); {
	case err != nil:
		return err
	case exists:
		if _, err := store.Size(ctx, u.Join(objstore.PendingMarker)); err == nil {
			return fmt.Errorf("output %s already exists: the uncommitted output of a job that failed to clean up or was killed (it holds %s); "+
				"remove the prefix and its pending uploads (docs/storage.md)", u, objstore.PendingMarker)
		}
		return fmt.Errorf("output %s already exists", u)
	}
	if err := insideUncommitted(ctx, store, u); err != nil {
		return err
	}
	pending := u.Join(objstore.PendingMarker)
	marker := fmt.Sprintf("drover job output, uncommitted: application %s, started %s, writer %s\n",
		d.c.appID, time.Now().UTC().Format(time.RFC3339), rand.Text())
	// The store decides between two jobs that both found the prefix empty;
	// a marker with this writer's token is this job's own, stored by a
	// first attempt whose answer was lost.
	if err := store.PutIfAbsent(ctx, pending, []byte(marker)); err != nil {
		if !errors.Is(err, objstore.ErrExists) {
			return err
		}
		if got, rerr := store.ReadAll(ctx, pending); rerr != nil || string(got) != marker {
			return fmt.Errorf("output %s already exists: another job began writing it just now", u)
		}
	}
	// A job writing a prefix above or below this one may have checked
	// before this marker was there: looking again after it is, one of the
	// two sees the other and steps back.
	objs, err := store.ListTree(ctx, u)
	if err == nil && (len(objs) != 1 || objs[0].URI != pending) {
		err = fmt.Errorf("output %s: another job began writing inside it just now", u)
	}
	if err == nil {
		err = insideUncommitted(ctx, store, u)
	}
	if err != nil {
		if derr := store.Delete(context.WithoutCancel(ctx), pending); derr != nil {
			err = errors.Join(err, derr)
		}
		return err
	}
	defer func() {
		if err == nil || errors.Is(err, errDriverKilled) {
			return
		}
		// Even when the driver's context has ended (a cancelled job): the
		// prefix was empty, so everything under it is this job's.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rerr := store.RemovePrefix(cctx, u); rerr != nil {
			err = errors.Join(err, fmt.Errorf("removing the output of the failed job from %s: %w", u, rerr))
		}
		// An attempt the failure killed may still start an upload after
		// this sweep; once the executors have stopped, none can.
		d.c.sweepUploadsAtStop(store, u)
	}()
	out.Dir = u.String()
	uploads := make([]objstore.Pending, d.parts)
	err = d.run(out, seq(d.parts), func(p int, b []byte) error {
		// Results come from executors: the key must be this partition's.
		if err := json.Unmarshal(b, &uploads[p]); err != nil {
			return fmt.Errorf("partition %d: its task's result is no pending upload: %w", p, err)
		}
		if want := u.Join(fmt.Sprintf("part-%05d%s", p, out.Ext)).String(); uploads[p].Key != want {
			return fmt.Errorf("partition %d: its task uploaded %s, not %s", p, uploads[p].Key, want)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := commitUploads(ctx, store, uploads); err != nil {
		return err
	}
	if err := store.Put(ctx, u.Join(objstore.SuccessMarker), nil); err != nil {
		return err
	}
	// Committed: what follows only tidies, and its failure does not undo
	// the output (readers go by _SUCCESS).
	if n, err := store.AbortUploads(ctx, u); err != nil {
		d.c.log.Warn("aborting the uploads of failed or duplicate task attempts", "prefix", u.String(), "err", err)
	} else if n > 0 {
		d.c.log.Info("aborted the uploads of failed or duplicate task attempts", "prefix", u.String(), "uploads", n)
	}
	// An attempt still running on an executor thought lost may start an
	// upload after that sweep, as after a failure.
	d.c.sweepUploadsAtStop(store, u)
	if err := store.Delete(ctx, pending); err != nil {
		d.c.log.Warn("deleting the pending marker of a committed output", "marker", pending.String(), "err", err)
	}
	return nil
}

// commitUploads completes the pending uploads, commitParallelism at a time,
// and stops at the first failure.
func commitUploads(ctx context.Context, store *objstore.Store, uploads []objstore.Pending) error {
	if testHookStoreCommit != nil {
		if err := testHookStoreCommit(0); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, commitParallelism)
	var wg sync.WaitGroup
	var mu sync.Mutex
	completed := 0
	for p, up := range uploads {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			// Not cancelled with the job: a completion the store received
			// may take effect after its client gave up, behind the
			// clean-up's back; let each finish so the clean-up sees it.
			if err := store.Complete(context.WithoutCancel(ctx), up); err != nil {
				cancel(fmt.Errorf("committing partition %d: %w", p, err))
				return
			}
			if testHookStoreCommit != nil {
				mu.Lock()
				completed++
				err := testHookStoreCommit(completed)
				mu.Unlock()
				if err != nil {
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// sweepUploadsAtStop aborts the uploads of parts open directly under the
// output prefix u once the application's executors have stopped: those of
// task attempts that outlived their job (killed by its failure, or running
// on an executor thought lost), started after the job's own sweep and
// billed until aborted. Deeper keys are left alone: once this job's
// _PENDING is gone, another job may be writing an output inside u.
func (c *Context) sweepUploadsAtStop(store *objstore.Store, u objstore.URI) {
	if c.afterStop == nil {
		return
	}
	c.afterStop.add(func(ctx context.Context) {
		if n, err := store.AbortUploadsDirectlyUnder(ctx, u); err != nil {
			c.log.Warn("aborting the uploads of task attempts that outlived their job", "prefix", u.String(), "err", err)
		} else if n > 0 {
			c.log.Info("aborted the uploads of task attempts that outlived their job", "prefix", u.String(), "uploads", n)
		}
	})
}

// insideUncommitted refuses an output u inside another job's uncommitted
// output (a prefix above it holding _PENDING and no _SUCCESS): that job's
// clean-up or sweep would take this one's parts and uploads.
func insideUncommitted(ctx context.Context, store *objstore.Store, u objstore.URI) error {
	for key := u.Key; strings.Contains(key, "/"); {
		key = key[:strings.LastIndex(key, "/")]
		parent := objstore.URI{Bucket: u.Bucket, Key: key}
		if _, err := store.Size(ctx, parent.Join(objstore.PendingMarker)); err != nil {
			continue
		}
		if _, err := store.Size(ctx, parent.Join(objstore.SuccessMarker)); err == nil {
			continue // committed; only its marker's delete failed
		}
		return fmt.Errorf("output %s is inside %s, the uncommitted output of another job (it holds %s): write elsewhere, "+
			"or wait for that job", u, parent, objstore.PendingMarker)
	}
	return nil
}
