package objstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

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
