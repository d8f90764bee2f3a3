package dataflow

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/bits"
	"os"
	"strings"
	"unsafe"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/objstore"
)

func rangeProducer(n *Node, p int) Producer {
	return func(emit func([]byte) error) error {
		var buf [binary.MaxVarintLen64]byte
		for v := range rangeValues(n.Start, n.End, n.Step, p, n.NumPartitions) {
			if err := emit(binary.AppendVarint(buf[:0], v)); err != nil {
				return err
			}
		}
		return nil
	}
}

// rangeValues is partition p of parts of start, start+step, … up to end
// (excluded). The arithmetic is unsigned and 128-bit where it must be, so
// ranges that span most of int64 neither overflow nor lose values.
func rangeValues(start, end, step int64, p, parts int) iter.Seq[int64] {
	return func(yield func(int64) bool) {
		var span, stride uint64
		switch {
		case step > 0 && end > start:
			span, stride = uint64(end)-uint64(start), uint64(step)
		case step < 0 && end < start:
			span, stride = uint64(start)-uint64(end), -uint64(step)
		default:
			return
		}
		count := span / stride
		if span%stride != 0 {
			count++
		}
		lo, hi := share(count, p, parts), share(count, p+1, parts)
		for i := lo; i < hi; i++ {
			// Two's complement: the wrapped sum is the value, which lies
			// between start and end.
			if !yield(int64(uint64(start) + i*uint64(step))) {
				return
			}
		}
	}
}

// share is count×p/parts without overflow.
func share(count uint64, p, parts int) uint64 {
	hi, lo := bits.Mul64(count, uint64(p))
	q, _ := bits.Div64(hi, lo, uint64(parts))
	return q
}

// textLines emits the lines that start inside the split, without their
// line terminators (\n or \r\n). A split after the first skips the partial
// line it starts in; the last line is read past the split's end. The file
// is read in fresh chunks that are never written again, so the lines are
// strings over them, without a copy or an allocation per line. The bytes
// of the lines emitted, terminators included, are added to *bytesRead: the
// splits of a file add up to its size, though each reads a little past its
// end. A compressed file adds the bytes read from it.
func textLines(ctx context.Context, s FileSplit, store *objstore.Store, bytesRead *int64) func(emit func(string) error) error {
	if s.Compression != "" {
		return compressedLines(ctx, s, store, bytesRead)
	}
	return func(emit func(string) error) error {
		f, err := openSplit(ctx, s, store)
		if err != nil {
			return fmt.Errorf("reading text file: %w", err)
		}
		defer f.Close()
		pos := s.Start // file offset of the next byte to read
		skip := false
		if pos > 0 {
			pos-- // a line starts at s.Start when the byte before it ends one
			skip = true
		}
		end := s.Start + s.Size
		chunkSize := int(min(max(s.Size, 64<<10), 1<<20))
		var tail []byte  // the start of a line cut by the end of the last chunk
		lineStart := pos // file offset of tail[0]
		for n := 0; ; n++ {
			if n&15 == 0 && ctx.Err() != nil {
				return context.Cause(ctx)
			}
			chunk := make([]byte, max(chunkSize, 2*len(tail)))
			copy(chunk, tail)
			read, err := f.ReadAt(chunk[len(tail):], pos)
			if err != nil && err != io.EOF {
				if _, named := errors.AsType[*objstore.Error](err); named {
					return err // it names the object already
				}
				return fmt.Errorf("reading %s: %w", s.Path, err)
			}
			pos += int64(read)
			data := chunk[:len(tail)+read]
			text := unsafe.String(unsafe.SliceData(data), len(data))
			for {
				i := strings.IndexByte(text, '\n')
				if i < 0 {
					break
				}
				line := text[:i]
				text = text[i+1:]
				if skip {
					skip = false
				} else {
					if lineStart >= end {
						return nil
					}
					*bytesRead += int64(i + 1)
					if err := emit(trimCR(line)); err != nil {
						return err
					}
				}
				lineStart += int64(i + 1)
			}
			tail = []byte(text)
			if read == 0 || err == io.EOF {
				if len(text) > 0 && !skip && lineStart < end {
					*bytesRead += int64(len(text))
					return emit(trimCR(text)) // a last line without a terminator
				}
				return nil
			}
		}
	}
}

// openSplit opens the file of a split: an object with ranged GETs that
// stream the split (the executor reads it directly from the store), or a
// local file.
func openSplit(ctx context.Context, s FileSplit, store *objstore.Store) (interface {
	io.ReaderAt
	io.Closer
}, error) {
	if !objstore.HasScheme(s.Path) {
		return os.Open(s.Path)
	}
	u, err := storeObject("reading", s.Path, store)
	if err != nil {
		return nil, err
	}
	return store.NewReaderAt(ctx, u, s.ETag, s.FileSize, s.Start+s.Size), nil
}

// storeObject is path's object for an operation (what, for the error) of
// this process's object-store client, which must exist.
func storeObject(what, path string, store *objstore.Store) (objstore.URI, error) {
	u, err := objstore.Parse(path)
	if err != nil {
		return objstore.URI{}, err
	}
	if store == nil {
		return objstore.URI{}, fmt.Errorf("%s %s: this executor has no object-store client", what, path)
	}
	return u, nil
}

// countingReaderAt adds the bytes read through it to *n.
type countingReaderAt struct {
	r interface {
		io.ReaderAt
		io.Closer
	}
	n *int64
}

func (c countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	k, err := c.r.ReadAt(p, off)
	*c.n += int64(k)
	return k, err
}

func (c countingReaderAt) Close() error { return c.r.Close() }

// countingReader adds the bytes read through it to *n.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	*c.n += int64(k)
	return k, err
}

// countingWriter adds the bytes written through it to *n.
type countingWriter struct {
	w io.Writer
	n *int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	*c.n += int64(k)
	return k, err
}

func trimCR(s string) string {
	if n := len(s); n > 0 && s[n-1] == '\r' {
		return s[:n-1]
	}
	return s
}

// jsonRecords turns JSON lines into records of the type schema describes.
// Blank lines are skipped, as Spark's JSON reader does.
func jsonRecords(lines func(emit func(string) error) error, schema *codec.Schema, path string) Producer {
	return func(emit func([]byte) error) error {
		var rec []byte
		return lines(func(line string) error {
			if strings.TrimSpace(line) == "" {
				return nil
			}
			var err error
			if rec, err = schema.AppendFromJSON(rec[:0], unsafe.Slice(unsafe.StringData(line), len(line))); err != nil {
				return fmt.Errorf("reading JSON lines %s: %w (line %q)", path, err, abbreviate(line, 80))
			}
			return emit(rec)
		})
	}
}

// abbreviate is at most n bytes of s, for an error message.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
