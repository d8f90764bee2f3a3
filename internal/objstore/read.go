package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ErrChanged is what reading a version of an object (its ETag, from a
// listing) returns once the object has been rewritten: a job that read a
// split of each version would mix them, cutting lines or Parquet pages
// apart. S3A checks the same by default (fs.s3a.change.detection.*).
var ErrChanged = errors.New("the object changed since it was listed: it was rewritten while the job read it")

// OpenRange returns the n bytes of the object from off (to its end when
// n < 0), with one ranged GET. With an etag (from a listing, Object.ETag)
// the GET asks for that version only (If-Match), and an object rewritten
// since fails with ErrChanged; "" reads whatever version is there.
func (s *Store) OpenRange(ctx context.Context, u URI, etag string, off, n int64) (io.ReadCloser, error) {
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
	in := &s3.GetObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(u.Key), Range: aws.String(rng)}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	out, err := c.GetObject(ctx, in)
	if err != nil {
		if etag != "" && isPreconditionFailed(err) {
			err = fmt.Errorf("%w (it had ETag %s)", ErrChanged, etag)
		}
		return nil, opError("reading", u, err)
	}
	return out.Body, nil
}

// isPreconditionFailed reports a store's 412: a condition (If-Match,
// If-None-Match) that does not hold.
func isPreconditionFailed(err error) bool {
	return isStoreAnswer(err, http.StatusPreconditionFailed, "PreconditionFailed")
}

// isNotImplemented reports a store's 501 for a feature it lacks.
func isNotImplemented(err error) bool {
	return isStoreAnswer(err, http.StatusNotImplemented, "NotImplemented")
}

// isStoreAnswer reports whether err is the store's answer with the error
// code, or with the HTTP status when its body named none.
func isStoreAnswer(err error, status int, code string) bool {
	if errorCode(err) == code {
		return true
	}
	re, ok := errors.AsType[*awshttp.ResponseError](err)
	return ok && re.HTTPStatusCode() == status
}

// ReadAll reads the whole object u: a small one, such as a marker.
func (s *Store) ReadAll(ctx context.Context, u URI) ([]byte, error) {
	body, err := s.OpenRange(ctx, u, "", 0, -1)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	return b, opError("reading", u, err)
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// ReaderAt reads an object of known size. For a split that ends at end,
// the bytes up to end (and a little past it, for the line that crosses it)
// come in one ranged GET streamed as they are read, and reads past that in
// further GETs of at least readAhead. Without a split's end (end 0, as a
// Parquet file is read), a GET asks for what the read needs, or for the
// rest of a range the caller said it would read (Expect). Reads within a
// GET are expected to be sequential; a read elsewhere starts a new GET.
// Not safe for concurrent use.
type ReaderAt struct {
	s    *Store
	ctx  context.Context
	uri  URI
	etag string
	size int64
	end  int64

	body io.ReadCloser
	pos  int64 // offset of the body's next byte
	left int64 // bytes the body has still to give

	expected []byteRange // from Expect
}

// byteRange is the bytes [start, end) of an object.
type byteRange struct{ start, end int64 }

// readAhead is the least a GET asks for past what is read: the line that
// crosses a split's end rarely needs more, and a body closed before its end
// costs the connection.
const readAhead = 64 << 10

// NewReaderAt returns a reader of the object u of size bytes for a split
// ending at end; with an etag, of that version only (see OpenRange).
func (s *Store) NewReaderAt(ctx context.Context, u URI, etag string, size, end int64) *ReaderAt {
	return &ReaderAt{s: s, ctx: ctx, uri: u, etag: etag, size: size, end: min(end, size)}
}

// Expect says that the n bytes at off will be read in order: a GET that
// starts among them asks for all the rest of them at once (and streams
// them as they are read) instead of what one read needs, and for nothing
// past them. A Parquet reader names the column chunks it will read: one
// GET per chunk, where reads of one page each would take one per page.
func (r *ReaderAt) Expect(off, n int64) {
	r.expected = append(r.expected, byteRange{off, off + n})
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
// and readAhead past it, or to the end of an expected range.
func (r *ReaderAt) open(at, need int64) error {
	r.closeBody()
	stop := at + need
	if r.end > 0 {
		stop = at + max(need, readAhead)
		if at < r.end {
			stop = max(stop, r.end+readAhead)
		}
	}
	for _, e := range r.expected {
		if at >= e.start && at < e.end {
			// No read-ahead past it: what follows an expected range is
			// not read (a Parquet column not projected).
			stop = max(at+need, e.end)
			break
		}
	}
	stop = min(stop, r.size)
	body, err := r.s.OpenRange(r.ctx, r.uri, r.etag, at, stop-at)
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
