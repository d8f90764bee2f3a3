package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// OpenRange returns the n bytes of the object from off (to its end when
// n < 0), with one ranged GET.
func (s *Store) OpenRange(ctx context.Context, u URI, off, n int64) (io.ReadCloser, error) {
	c, err := s.s3(ctx)
	if err != nil {
		return nil, err
	}
	rng := fmt.Sprintf("bytes=%d-", off)
	if n >= 0 {
		if n == 0 {
			return io.NopCloser(eofReader{}), nil
		}
		rng = fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(u.Key), Range: aws.String(rng)})
	if err != nil {
		return nil, opError("reading", u, err)
	}
	return out.Body, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// ReaderAt reads an object of known size for a split that ends at end: the
// bytes up to end (and a little past it, for the line that crosses it)
// come in one ranged GET streamed as they are read, and reads past that in
// further GETs sized by the read. Reads are expected to be sequential, as
// a text split is read; a read elsewhere starts a new GET. Not safe for
// concurrent use.
type ReaderAt struct {
	s    *Store
	ctx  context.Context
	uri  URI
	size int64
	end  int64

	body io.ReadCloser
	pos  int64 // offset of the body's next byte
	left int64 // bytes the body has still to give
}

// readAhead is the least a GET asks for past what is read: the line that
// crosses a split's end rarely needs more, and a body closed before its end
// costs the connection.
const readAhead = 64 << 10

// NewReaderAt returns a reader of the object u of size bytes for a split
// ending at end.
func (s *Store) NewReaderAt(ctx context.Context, u URI, size, end int64) *ReaderAt {
	return &ReaderAt{s: s, ctx: ctx, uri: u, size: size, end: min(end, size)}
}

// ReadAt reads len(p) bytes at off, or up to the end of the object with
// io.EOF.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("reading %s: negative offset %d", r.uri, off)
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= r.size {
			return n, io.EOF
		}
		if r.body == nil || r.pos != at || r.left == 0 {
			if err := r.open(at, int64(len(p)-n)); err != nil {
				return n, err
			}
		}
		want := min(int64(len(p)-n), r.left)
		m, err := io.ReadFull(r.body, p[n:n+int(want)])
		n += m
		r.pos += int64(m)
		r.left -= int64(m)
		if err != nil {
			r.closeBody()
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return n, opError("reading", r.uri, fmt.Errorf("the store sent %d bytes fewer than asked at offset %d (did the object change?)", want-int64(m), r.pos))
			}
			return n, opError("reading", r.uri, err)
		}
	}
	return n, nil
}

// open starts a GET at at for at least need bytes: up to the split's end
// and readAhead past it, or further when need asks for more.
func (r *ReaderAt) open(at, need int64) error {
	r.closeBody()
	stop := at + max(need, readAhead)
	if at < r.end {
		stop = max(stop, r.end+readAhead)
	}
	stop = min(stop, r.size)
	body, err := r.s.OpenRange(r.ctx, r.uri, at, stop-at)
	if err != nil {
		return err
	}
	r.body, r.pos, r.left = body, at, stop-at
	return nil
}

func (r *ReaderAt) closeBody() {
	if r.body != nil {
		_ = r.body.Close()
		r.body = nil
	}
}

// Close releases the open GET, if any.
func (r *ReaderAt) Close() error {
	r.closeBody()
	return nil
}
