package inputsplit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/parquetio"
)

// Options says how input is split.
type Options struct {
	// MaxPartitionBytes is spark.files.maxPartitionBytes: the largest
	// split of a line file.
	MaxPartitionBytes int64
	// Parallelism is the application's default parallelism: splits are
	// smaller when that gives every core a share.
	Parallelism int
	// Store lists and reads an object store's paths; nil when the path is
	// local.
	Store *objstore.Store
}

// minSplit is Spark's spark.files.openCostInBytes: no split of a line file
// is smaller unless the file is.
const minSplit = 4 << 20

// Lines lists the files of path and cuts them into byte ranges whose lines
// each split reads: at most MaxPartitionBytes, fewer when that gives every
// core a share, and a compressed file whole.
func Lines(ctx context.Context, path string, opts Options) ([]dataflow.FileSplit, error) {
	files, err := Files(ctx, path, opts.Store)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, f := range files {
		total += f.FileSize
	}
	split := opts.MaxPartitionBytes
	if perCore := total / int64(max(1, opts.Parallelism)); perCore < split {
		split = max(perCore, minSplit)
	}
	var splits []dataflow.FileSplit
	for _, f := range files {
		if c := dataflow.CompressionOf(f.Path); c != "" {
			// A gzip or zstd stream cannot be entered in the middle: one
			// split reads the whole file, as Spark does for codecs that
			// cannot split.
			f.Size, f.Compression = f.FileSize, c
			splits = append(splits, f)
			continue
		}
		for off := int64(0); off < f.FileSize || (off == 0 && f.FileSize == 0); off += split {
			f.Start, f.Size = off, min(split, f.FileSize-off)
			splits = append(splits, f)
			if f.FileSize == 0 {
				break
			}
		}
	}
	return splits, nil
}

// RowGroups is one split per row group of each Parquet file, read from
// the files' footers.
func RowGroups(ctx context.Context, files []dataflow.FileSplit, store *objstore.Store) ([]dataflow.FileSplit, error) {
	var splits []dataflow.FileSplit
	for _, f := range files {
		groups, err := rowGroups(ctx, f, store)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		for g := range groups {
			f.RowGroup = g
			splits = append(splits, f)
		}
	}
	return splits, nil
}

// rowGroups is the number of row groups of a Parquet file, from its footer.
func rowGroups(ctx context.Context, file dataflow.FileSplit, store *objstore.Store) (int, error) {
	ra, err := dataflow.OpenReaderAt(ctx, file.Path, file.ETag, file.FileSize, store)
	if err != nil {
		return 0, err
	}
	defer ra.Close()
	f, err := parquetio.Open(ra, file.FileSize)
	if err != nil {
		return 0, err
	}
	return len(f.RowGroups()), nil
}

// Files is the files path names, each as a split of none of its bytes
// yet: its path, its size and, for an object of a store (path is a URI),
// the version listed; local files otherwise.
func Files(ctx context.Context, path string, store *objstore.Store) ([]dataflow.FileSplit, error) {
	if objstore.HasScheme(path) {
		if store == nil {
			return nil, fmt.Errorf("%s: no object store to list it", path)
		}
		objs, err := store.List(ctx, path)
		if err != nil {
			return nil, err
		}
		files := make([]dataflow.FileSplit, len(objs))
		for i, o := range objs {
			files[i] = dataflow.FileSplit{Path: o.URI.String(), FileSize: o.Size, ETag: o.ETag}
		}
		return files, nil
	}
	paths, err := expandPath(path)
	if err != nil {
		return nil, err
	}
	files := make([]dataflow.FileSplit, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		files[i] = dataflow.FileSplit{Path: p, FileSize: fi.Size(), ModTime: fi.ModTime().UnixNano()}
	}
	return files, nil
}

// expandPath is the absolute paths of the files path names: a directory's
// files, a glob's matches or the file itself; hidden names (a job's output
// markers) left out.
func expandPath(path string) ([]string, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		var files []string
		for _, e := range entries {
			if !e.IsDir() && !objstore.Hidden(e.Name()) {
				abs, err := filepath.Abs(filepath.Join(path, e.Name()))
				if err != nil {
					return nil, err
				}
				files = append(files, abs)
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("directory %s has no files", path)
		}
		return files, nil
	}
	files, err := filepath.Glob(path)
	if err != nil {
		return nil, fmt.Errorf("bad pattern %q: %w", path, err)
	}
	// As in a directory, hidden names are left out (a job's output markers
	// are not data) unless the pattern's last part is one.
	if !objstore.Hidden(filepath.Base(path)) {
		files = slices.DeleteFunc(files, func(f string) bool { return objstore.Hidden(filepath.Base(f)) })
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no file matches %s", path)
	}
	slices.Sort(files)
	abs := files[:0]
	for _, f := range files {
		a, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		abs = append(abs, a)
	}
	return abs, nil
}
