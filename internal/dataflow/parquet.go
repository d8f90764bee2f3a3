package dataflow

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/parquetio"
)

// parquetRecords emits the records of the split's row group, reading the
// footer and then only the projected columns' chunks (ranged GETs on S3).
// The bytes read are added to *bytesRead.
func parquetRecords(ctx context.Context, s FileSplit, cols []parquetio.Column, store *objstore.Store, bytesRead *int64) Producer {
	return func(emit func([]byte) error) error {
		f, err := OpenReaderAt(ctx, s.Path, s.ETag, s.FileSize, store)
		if err != nil {
			return fmt.Errorf("reading Parquet: %w", err)
		}
		defer f.Close()
		ra := countingReaderAt{f, bytesRead}
		pf, err := parquetio.Open(ra, s.FileSize)
		if err != nil {
			return fmt.Errorf("reading %s: %w", s.Path, err)
		}
		if or, ok := f.(*objstore.ReaderAt); ok {
			// One GET per column chunk, not one per page read.
			for _, c := range parquetio.ChunkRanges(pf, s.RowGroup, cols) {
				or.Expect(c.Off, c.Len)
			}
		}
		if err := parquetio.ReadRowGroup(pf, s.RowGroup, cols, emit); err != nil {
			return fmt.Errorf("reading %s, row group %d: %w", s.Path, s.RowGroup, err)
		}
		return nil
	}
}

// OpenReaderAt opens a file of known size for random reads: an object
// (of version etag, if not empty) read with one ranged GET per read, or
// per range it is told to expect (objstore.ReaderAt.Expect), or a local
// file.
func OpenReaderAt(ctx context.Context, path, etag string, size int64, store *objstore.Store) (interface {
	io.ReaderAt
	io.Closer
}, error) {
	if !objstore.HasScheme(path) {
		return os.Open(path)
	}
	u, err := storeObject("reading", path, store)
	if err != nil {
		return nil, err
	}
	return store.NewReaderAt(ctx, u, etag, size, 0), nil
}

// writeParquet writes the partition's records as a Parquet file to f; the
// caller finishes the part (the driver's commit publishes it).
func writeParquet(f io.Writer, p Producer, cols []parquetio.Column, codec string) error {
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := parquetio.NewWriter(bw, cols, codec)
	if err != nil {
		return err
	}
	if err := p(w.Write); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return bw.Flush()
}
