package objstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// PartSize is the size of a multipart upload's parts (S3's minimum is 5 MiB
// for all but the last).
var PartSize = 8 << 20

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
var partBuffers sync.Pool

func getPartBuffer() []byte {
	if b, ok := partBuffers.Get().(*[]byte); ok && cap(*b) == PartSize {
		return (*b)[:0]
	}
	return make([]byte, 0, PartSize)
}

func putPartBuffer(b []byte) {
	if cap(b) == PartSize {
		partBuffers.Put(&b)
	}
}

// Writer streams an object to the store: each PartSize bytes written are
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

// Create returns a writer of the object u; nothing is sent before PartSize
// bytes are written or Close is called.
func (s *Store) Create(ctx context.Context, u URI) (*Writer, error) {
	c, err := s.s3(ctx)
	if err != nil {
		return nil, err
	}
	return &Writer{s: s, c: c, ctx: ctx, uri: u, buf: getPartBuffer()}, nil
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
		m := min(len(p), PartSize-len(w.buf))
		w.buf = append(w.buf, p[:m]...)
		p, n = p[m:], n+m
		if len(w.buf) == PartSize {
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
		w.buf = getPartBuffer()
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

// Pending is an object whose bytes are all uploaded but which is not
// visible yet: a multipart upload that only Complete (the job's commit)
// turns into the object, and that aborting, or a bucket's lifecycle rule,
// drops. It is what a task attempt hands its driver, so the attempt's
// output is tied to the attempt: the upload id.
type Pending struct {
	Key      string        `json:"key"` // the object's URI, s3://bucket/key
	UploadID string        `json:"uploadId"`
	Parts    []PendingPart `json:"parts"`
}

// PendingPart is one uploaded part of a pending object.
type PendingPart struct {
	Num  int32  `json:"n"`
	ETag string `json:"etag"`
}

// Stage sends what is buffered as the last part and leaves the upload
// open: the object does not exist until Complete. Every object is a
// multipart upload here, even an empty one, so that nothing is visible
// before the commit.
func (w *Writer) Stage() (Pending, error) {
	if w.err != nil {
		return Pending{}, w.err
	}
	if w.closed {
		return Pending{}, fmt.Errorf("writing %s: writer closed", w.uri)
	}
	parts, err := w.sendLast(true)
	if err != nil {
		return Pending{}, err
	}
	w.closed = true
	p := Pending{Key: w.uri.String(), UploadID: w.id, Parts: make([]PendingPart, len(parts))}
	for i, cp := range parts {
		p.Parts[i] = PendingPart{Num: aws.ToInt32(cp.PartNumber), ETag: aws.ToString(cp.ETag)}
	}
	return p, nil
}

// Complete makes a pending object visible, whole, under its key.
func (s *Store) Complete(ctx context.Context, p Pending) error {
	u, err := Parse(p.Key)
	if err != nil {
		return err
	}
	c, err := s.s3(ctx)
	if err != nil {
		return err
	}
	parts := make([]types.CompletedPart, len(p.Parts))
	for i, pp := range p.Parts {
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(pp.Num), ETag: aws.String(pp.ETag)}
	}
	return opError("completing the upload of", u, complete(ctx, c, u, p.UploadID, parts))
}

// complete completes a multipart upload. When the SDK retries it (the
// first answer was lost, or was a 5xx), S3 can answer NoSuchUpload because
// the first attempt did complete it: then the object exists with the ETag
// S3 gives these parts, and that is success.
func complete(ctx context.Context, c *s3.Client, u URI, id string, parts []types.CompletedPart) error {
	_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(u.Bucket), Key: aws.String(u.Key), UploadId: aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err == nil || !isNoSuchUpload(err) {
		return err
	}
	want, ok := multipartETag(parts)
	if !ok {
		return err
	}
	out, herr := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(u.Key)})
	if herr != nil || strings.Trim(aws.ToString(out.ETag), `"`) != want {
		return err
	}
	return nil
}

// multipartETag is the ETag S3 gives the object a multipart upload of
// parts makes: the MD5 of the parts' binary MD5s, "-", the number of
// parts. ok is false when a part's ETag is no MD5 (some stores' are not).
func multipartETag(parts []types.CompletedPart) (etag string, ok bool) {
	h := md5.New()
	for _, p := range parts {
		b, err := hex.DecodeString(strings.Trim(aws.ToString(p.ETag), `"`))
		if err != nil || len(b) != md5.Size {
			return "", false
		}
		h.Write(b)
	}
	return fmt.Sprintf("%x-%d", h.Sum(nil), len(parts)), true
}

// AbortUploads aborts every multipart upload left open under the prefix
// u/ (pending objects that were never committed: of failed, duplicate or
// killed task attempts) and returns how many it aborted. Its objects are
// not touched.
func (s *Store) AbortUploads(ctx context.Context, u URI) (int, error) {
	return s.abortUploadsUnder(ctx, u, true)
}

// AbortUploadsDirectlyUnder aborts, as AbortUploads, only the uploads of
// keys directly under u/ (a job's parts), leaving those of deeper keys:
// another job's output inside u may be writing them.
func (s *Store) AbortUploadsDirectlyUnder(ctx context.Context, u URI) (int, error) {
	return s.abortUploadsUnder(ctx, u, false)
}

func (s *Store) abortUploadsUnder(ctx context.Context, u URI, deep bool) (int, error) {
	c, err := s.s3(ctx)
	if err != nil {
		return 0, err
	}
	prefix := u.Key
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return abortUploads(ctx, c, u.Bucket, prefix, deep)
}

func abortUploads(ctx context.Context, c *s3.Client, bucket, prefix string, deep bool) (int, error) {
	var errs []error
	n := 0
	ups := s3.NewListMultipartUploadsPaginator(c, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for ups.HasMorePages() {
		page, err := ups.NextPage(ctx)
		if err != nil {
			errs = append(errs, opError("listing the uploads under", URI{Bucket: bucket, Key: prefix}, err))
			break
		}
		for _, up := range page.Uploads {
			if !deep && strings.Contains(strings.TrimPrefix(aws.ToString(up.Key), prefix), "/") {
				continue
			}
			_, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: up.Key, UploadId: up.UploadId})
			if err != nil && !isNoSuchUpload(err) {
				errs = append(errs, opError("aborting an upload of", URI{Bucket: bucket, Key: aws.ToString(up.Key)}, err))
				continue
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}

// isNoSuchUpload reports whether err says the upload is gone: completed or
// aborted meanwhile, which is what aborting wanted.
func isNoSuchUpload(err error) bool { return errorCode(err) == "NoSuchUpload" }

// releaseBuffers gives the writer's buffers to the next writers, once no
// upload uses them.
func (w *Writer) releaseBuffers() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range append(w.free, w.buf) {
		putPartBuffer(b)
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

// Put writes a small object in one request (the _SUCCESS marker).
func (s *Store) Put(ctx context.Context, u URI, data []byte) error {
	c, err := s.s3(ctx)
	if err != nil {
		return err
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(u.Key), Body: bytes.NewReader(data)})
	return opError("writing", u, err)
}

// ErrExists is PutIfAbsent's error when the object is there already.
var ErrExists = errors.New("the object exists already")

// PutIfAbsent writes data as the object u unless u exists: the store
// decides (If-None-Match: *), so of two writers racing for one key one
// fails with ErrExists. A retried write whose first attempt was stored
// also meets ErrExists: a caller that must tell the two apart writes data
// of its own making and reads the object back. A store that ignores the
// condition overwrites; one that refuses it (NotImplemented) gets a plain
// write.
func (s *Store) PutIfAbsent(ctx context.Context, u URI, data []byte) error {
	c, err := s.s3(ctx)
	if err != nil {
		return err
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(u.Key), Body: bytes.NewReader(data),
		IfNoneMatch: aws.String("*")})
	switch {
	case err == nil:
	case isPreconditionFailed(err) || isConditionalConflict(err):
		err = ErrExists
	case isNotImplemented(err):
		return s.Put(ctx, u, data)
	}
	return opError("writing", u, err)
}

// isConditionalConflict reports S3's 409 for a conditional write that
// raced with another write of the key.
func isConditionalConflict(err error) bool { return errorCode(err) == "ConditionalRequestConflict" }

// maxCopySize is the largest object one CopyObject copies (5 GiB); larger
// ones are copied in parts of copyPartSize. Variables for tests.
var (
	maxCopySize  int64 = 5 << 30
	copyPartSize int64 = 1 << 30
)

// Copy copies the object src to dst within the store, without the data
// passing through this process.
func (s *Store) Copy(ctx context.Context, src, dst URI) error {
	c, err := s.s3(ctx)
	if err != nil {
		return err
	}
	size, err := s.size(ctx, c, src)
	if err != nil {
		return opError("copying", src, err)
	}
	source := aws.String(copySource(src))
	if size <= maxCopySize {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(dst.Bucket), Key: aws.String(dst.Key), CopySource: source})
		return opError("copying "+src.String()+" to", dst, err)
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(dst.Bucket), Key: aws.String(dst.Key)})
	if err != nil {
		return opError("copying "+src.String()+" to", dst, err)
	}
	var parts []types.CompletedPart
	for off := int64(0); off < size && err == nil; off += copyPartSize {
		num := int32(len(parts) + 1)
		var out *s3.UploadPartCopyOutput
		out, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
			Bucket: aws.String(dst.Bucket), Key: aws.String(dst.Key), UploadId: up.UploadId, PartNumber: aws.Int32(num),
			CopySource: source, CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, min(off+copyPartSize, size)-1)),
		})
		if err == nil {
			parts = append(parts, types.CompletedPart{ETag: out.CopyPartResult.ETag, PartNumber: aws.Int32(num)})
		}
	}
	if err == nil {
		_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(dst.Bucket), Key: aws.String(dst.Key),
			UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	}
	if err != nil {
		_, _ = c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: aws.String(dst.Bucket), Key: aws.String(dst.Key), UploadId: up.UploadId})
		return opError("copying "+src.String()+" to", dst, err)
	}
	return nil
}

// copySource is CopyObject's bucket/key, the key URL-escaped segment by
// segment.
func copySource(u URI) string {
	segs := strings.Split(u.Key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return u.Bucket + "/" + strings.Join(segs, "/")
}

// Delete deletes objects of one bucket (missing ones are no error), up to
// 1000 per request.
func (s *Store) Delete(ctx context.Context, objs ...URI) error {
	c, err := s.s3(ctx)
	if err != nil {
		return err
	}
	for len(objs) > 0 {
		n := min(len(objs), 1000)
		batch := objs[:n]
		objs = objs[n:]
		ids := make([]types.ObjectIdentifier, len(batch))
		for i, u := range batch {
			if u.Bucket != batch[0].Bucket {
				return fmt.Errorf("deleting %s and %s: objects of different buckets", batch[0], u)
			}
			ids[i] = types.ObjectIdentifier{Key: aws.String(u.Key)}
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(batch[0].Bucket),
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return opError("deleting", batch[0], err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return opError("deleting", URI{Bucket: batch[0].Bucket, Key: aws.ToString(e.Key)},
				fmt.Errorf("%s: %s (and %d more)", aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1))
		}
	}
	return nil
}

// RemovePrefix deletes every object under the prefix u/ and aborts the
// multipart uploads left open there (by tasks that died while writing).
// Each directory's PendingMarker goes last, once every other object is
// gone: a listing returns it first (_ sorts before letters), and output
// whose removal failed half way must still read as uncommitted, not as a
// complete job's.
func (s *Store) RemovePrefix(ctx context.Context, u URI) error {
	c, err := s.s3(ctx)
	if err != nil {
		return err
	}
	prefix := u.Key
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if prefix == "" {
		return fmt.Errorf("removing %s: refusing to remove a whole bucket", u)
	}
	var errs []error
	if _, err := abortUploads(ctx, c, u.Bucket, prefix, true); err != nil {
		errs = append(errs, err)
	}
	objs, _, err := listPrefix(ctx, c, u.Bucket, prefix, false)
	if err != nil {
		return errors.Join(append(errs, opError("listing", u, err))...)
	}
	var rest, markers []URI
	for _, o := range objs {
		if _, name := splitKey(o.URI.Key); name == PendingMarker {
			markers = append(markers, o.URI)
		} else {
			rest = append(rest, o.URI)
		}
	}
	if err := s.Delete(ctx, rest...); err != nil {
		return errors.Join(append(errs, err)...)
	}
	if err := s.Delete(ctx, markers...); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
