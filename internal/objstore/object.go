package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

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

// Copy copies the object src to dst within the store, without the data
// passing through this process: in one CopyObject up to Config.MaxCopySize,
// else in parts of Config.CopyPartSize.
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
	if size <= s.cfg.MaxCopySize {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(dst.Bucket), Key: aws.String(dst.Key), CopySource: source})
		return opError("copying "+src.String()+" to", dst, err)
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(dst.Bucket), Key: aws.String(dst.Key)})
	if err != nil {
		return opError("copying "+src.String()+" to", dst, err)
	}
	partSize := s.cfg.CopyPartSize
	var parts []types.CompletedPart
	for off := int64(0); off < size && err == nil; off += partSize {
		num := int32(len(parts) + 1)
		var out *s3.UploadPartCopyOutput
		out, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
			Bucket: aws.String(dst.Bucket), Key: aws.String(dst.Key), UploadId: up.UploadId, PartNumber: aws.Int32(num),
			CopySource: source, CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, min(off+partSize, size)-1)),
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
