package dataflow

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/drover-project/drover/internal/objstore"
)

// CompressionOf is the codec a file's extension names, as Hadoop's codec
// factory picks it: "gzip" for .gz, "zstd" for .zst, "" otherwise.
func CompressionOf(path string) string {
	switch {
	case strings.HasSuffix(path, ".gz"):
		return "gzip"
	case strings.HasSuffix(path, ".zst"):
		return "zstd"
	}
	return ""
}

// compressedLines emits every line of a compressed file, which one split
// reads from its start to its end. The compressed bytes read are added to
// *bytesRead.
func compressedLines(ctx context.Context, s FileSplit, store *objstore.Store, bytesRead *int64) func(emit func(string) error) error {
	return func(emit func(string) error) error {
		raw, err := openStream(ctx, s, store)
		if err != nil {
			return fmt.Errorf("reading text file: %w", err)
		}
		defer raw.Close()
		counted := countingReader{raw, bytesRead}
		var r io.Reader
		switch s.Compression {
		case "gzip":
			gz, err := gzip.NewReader(bufio.NewReaderSize(counted, 256<<10))
			if err != nil {
				return fmt.Errorf("reading %s as gzip: %w", s.Path, err)
			}
			defer gz.Close()
			r = gz
		case "zstd":
			// One decoding goroutine: a task already has its core.
			zr, err := zstd.NewReader(counted, zstd.WithDecoderConcurrency(1))
			if err != nil {
				return fmt.Errorf("reading %s as zstd: %w", s.Path, err)
			}
			defer zr.Close()
			r = zr
		default:
			return fmt.Errorf("reading %s: unknown compression %q", s.Path, s.Compression)
		}
		br := bufio.NewReaderSize(r, 1<<20)
		for n := 0; ; n++ {
			if n&1023 == 0 && ctx.Err() != nil {
				return context.Cause(ctx)
			}
			line, err := br.ReadString('\n')
			if len(line) > 0 {
				if err := emit(trimCR(strings.TrimSuffix(line, "\n"))); err != nil {
					return err
				}
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				if _, named := errors.AsType[*objstore.Error](err); named {
					return err
				}
				return fmt.Errorf("reading %s (%s): %w", s.Path, s.Compression, err)
			}
		}
	}
}

// openStream opens a whole file for reading from its start: one GET for an
// object.
func openStream(ctx context.Context, s FileSplit, store *objstore.Store) (io.ReadCloser, error) {
	if !objstore.HasScheme(s.Path) {
		return os.Open(s.Path)
	}
	u, err := storeObject("reading", s.Path, store)
	if err != nil {
		return nil, err
	}
	return store.OpenRange(ctx, u, s.ETag, 0, -1)
}
