package objstore

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// partsInFlight is how many parts a writer uploads at once while its
// caller fills the next one, as S3A's fs.s3a.fast.upload.active.blocks: a
// task goes on computing while the store receives and stores its last
// parts, instead of waiting for each. A writer holds up to this many parts
// and the one being filled in memory.
const partsInFlight = 4

// partBuffers holds the part buffers of finished writers for the next
// ones: a task's writer would otherwise take fresh memory, faulted in page
// by page as it is first filled, for every part buffer, and leave it to
// the garbage collector.
// A buffer of another size (a store configured with another PartSize) is
// dropped rather than reused.
var partBuffers sync.Pool

func getPartBuffer(size int) []byte {
	if b, ok := partBuffers.Get().(*[]byte); ok && cap(*b) == size {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

func putPartBuffer(b []byte, size int) {
	if cap(b) == size {
		partBuffers.Put(&b)
	}
}

// Writer streams an object to the store: each Config.PartSize bytes written are
// sent as one part of a multipart upload, up to partsInFlight of them at
// once in the background; Close completes it, and the object appears whole
// or not at all. An object smaller than one part is sent with one PUT on
// Close. Abort (or a failed Close) cancels the upload and leaves nothing.
// Not safe for concurrent use.
type Writer struct {
	s      *Store
	c      *s3.Client
	ctx    context.Context
	uri    URI
	part   int // Config.PartSize
	buf    []byte
	id     string // the multipart upload, once started
	err    error
	closed bool

	// The part uploads under way: they run in uctx, which the first
	// failure cancels; slots holds one token per part in flight.
	uctx   context.Context
	cancel context.CancelCauseFunc
	slots  chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	etags  []string // by part number - 1, set as parts finish
	free   [][]byte // buffers of parts sent, for the next ones
	upErr  error    // the first failed part's
}

// Create returns a writer of the object u; nothing is sent before a part's
// bytes are written or Close is called.
func (s *Store) Create(ctx context.Context, u URI) (*Writer, error) {
	c, err := s.s3(ctx)
	if err != nil {
		return nil, err
	}
	return &Writer{s: s, c: c, ctx: ctx, uri: u, part: s.cfg.PartSize, buf: getPartBuffer(s.cfg.PartSize)}, nil
}

// Write buffers p, sending full parts.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, fmt.Errorf("writing %s: writer closed", w.uri)
	}
	n := 0
	for len(p) > 0 {
		m := min(len(p), w.part-len(w.buf))
		w.buf = append(w.buf, p[:m]...)
		p, n = p[m:], n+m
		if len(w.buf) == w.part {
			if err := w.flushPart(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// flushPart starts the upload of the buffer as the next part, once fewer
// than partsInFlight are under way, and gives the writer a buffer to fill.
func (w *Writer) flushPart() error {
	if err := w.ctx.Err(); err != nil {
		// Checked here too: a cancelled task must not start parts the SDK
		// would send anyway when its request is already signed.
		return w.fail(opError("writing", w.uri, err))
	}
	if w.id == "" {
		out, err := w.c.CreateMultipartUpload(w.ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(w.uri.Bucket), Key: aws.String(w.uri.Key)})
		if err != nil {
			return w.fail(opError("writing", w.uri, err))
		}
		w.id = aws.ToString(out.UploadId)
		w.uctx, w.cancel = context.WithCancelCause(w.ctx)
		w.slots = make(chan struct{}, partsInFlight)
	}
	select {
	case w.slots <- struct{}{}:
	case <-w.uctx.Done():
	}
	if err := w.uploadErr(); err != nil {
		return w.fail(err)
	}
	body := w.buf
	w.mu.Lock()
	w.etags = append(w.etags, "")
	num := int32(len(w.etags))
	if n := len(w.free); n > 0 {
		w.buf, w.free = w.free[n-1], w.free[:n-1]
	} else {
		w.buf = getPartBuffer(w.part)
	}
	w.mu.Unlock()
	w.wg.Go(func() {
		defer func() { <-w.slots }()
		out, err := w.c.UploadPart(w.uctx, &s3.UploadPartInput{
			Bucket: aws.String(w.uri.Bucket), Key: aws.String(w.uri.Key), UploadId: aws.String(w.id),
			PartNumber: aws.Int32(num), Body: bytes.NewReader(body),
		})
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			// Not reused: the HTTP transport may still be reading a body
			// the store answered early.
			if w.upErr == nil {
				w.upErr = opError("writing", w.uri, fmt.Errorf("part %d: %w", num, err))
				w.cancel(w.upErr)
			}
			return
		}
		w.free = append(w.free, body[:0])
		w.etags[num-1] = aws.ToString(out.ETag)
	})
	return nil
}

// uploadErr is the first failure of a part's upload, or the cancellation
// of the writer's context, or nil.
func (w *Writer) uploadErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.upErr != nil {
		return w.upErr
	}
	if err := w.ctx.Err(); err != nil {
		return opError("writing", w.uri, err)
	}
	return nil
}

// sendLast sends what is buffered as the last part (an empty one when no
// part was sent and empty is set), waits for every part and returns them.
func (w *Writer) sendLast(empty bool) ([]types.CompletedPart, error) {
	if len(w.buf) > 0 || empty && w.id == "" {
		if err := w.flushPart(); err != nil {
			return nil, err
		}
	}
	w.wg.Wait()
	w.releaseBuffers()
	if err := w.uploadErr(); err != nil {
		return nil, w.fail(err)
	}
	parts := make([]types.CompletedPart, len(w.etags))
	for i, etag := range w.etags {
		parts[i] = types.CompletedPart{ETag: aws.String(etag), PartNumber: aws.Int32(int32(i + 1))}
	}
	return parts, nil
}

// Close sends what is buffered and completes the object.
func (w *Writer) Close() error {
	if w.err != nil || w.closed {
		return w.err
	}
	w.closed = true
	if w.id == "" {
		_, err := w.c.PutObject(w.ctx, &s3.PutObjectInput{Bucket: aws.String(w.uri.Bucket), Key: aws.String(w.uri.Key), Body: bytes.NewReader(w.buf)})
		if err != nil {
			return w.fail(opError("writing", w.uri, err))
		}
		w.releaseBuffers()
		return nil
	}
	parts, err := w.sendLast(false)
	if err != nil {
		return err
	}
	if err := complete(w.ctx, w.c, w.uri, w.id, parts); err != nil {
		return w.fail(opError("writing", w.uri, err))
	}
	return nil
}

// releaseBuffers gives the writer's buffers to the next writers, once no
// upload uses them.
func (w *Writer) releaseBuffers() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range append(w.free, w.buf) {
		putPartBuffer(b, w.part)
	}
	w.free, w.buf = nil, nil
}

// Abort cancels the upload: the object is not created.
func (w *Writer) Abort() {
	if w.err == nil {
		w.err = fmt.Errorf("writing %s: aborted", w.uri)
	}
	w.abort()
}

func (w *Writer) fail(err error) error {
	w.err = err
	w.abort()
	return err
}

func (w *Writer) abort() {
	// The current buffer may be the body of a request that failed, which
	// the HTTP transport may still be reading: dropped, not reused.
	w.buf = nil
	if w.id == "" {
		return
	}
	// The parts under way first: one that lands after the abort would
	// leave the upload behind.
	w.cancel(w.err)
	w.wg.Wait()
	w.releaseBuffers()
	// Even when the task's context has ended: an upload left open keeps
	// its parts (and costs storage) until the bucket's lifecycle rules
	// remove it.
	ctx := context.WithoutCancel(w.ctx)
	_, _ = w.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(w.uri.Bucket), Key: aws.String(w.uri.Key), UploadId: aws.String(w.id)})
	w.id = ""
}
