package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
)

// failTimeout bounds the abort of a failed Upload, which runs even when
// the caller's context has ended.
const failTimeout = 30 * time.Second

// errUploadAborted is what an aborted Upload's transfer reads.
var errUploadAborted = errors.New("upload aborted")

// Upload streams one whole object to the store through the AWS SDK's
// transfer manager (feature/s3/transfermanager): what is written goes
// through a pipe to its UploadObject, which sends one PUT when the object
// is smaller than Config.PartSize and otherwise a multipart upload of
// parts of that size, partsInFlight at once; Close completes it and the
// object appears whole. For objects the driver writes and shows at once, such as the event
// log. Task output does not use it: the transfer manager always completes
// its uploads, and a task's must stay pending until the driver commits
// them (docs/storage.md). Close or Abort must be called: until then the
// transfer waits for more. Not safe for concurrent use.
type Upload struct {
	uri    URI
	pw     *io.PipeWriter
	done   chan struct{}
	err    error // UploadObject's, once done is closed
	closed bool
}

// Upload starts an upload of the object u.
func (s *Store) Upload(ctx context.Context, u URI) (*Upload, error) {
	c, err := s.s3(ctx)
	if err != nil {
		return nil, err
	}
	tm := transfermanager.New(c, func(o *transfermanager.Options) {
		o.PartSizeBytes = int64(s.cfg.PartSize)
		o.MultipartUploadThreshold = int64(s.cfg.PartSize)
		o.Concurrency = partsInFlight
		// A fresh context for aborting the multipart upload of a failed
		// or cancelled transfer, so that it is not left open.
		o.FailTimeout = failTimeout
	})
	pr, pw := io.Pipe()
	up := &Upload{uri: u, pw: pw, done: make(chan struct{})}
	go func() {
		defer close(up.done)
		_, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{
			Bucket: aws.String(u.Bucket), Key: aws.String(u.Key), Body: pr,
		})
		if err != nil {
			up.err = opError("writing", u, err)
			// Writes that wait on the transfer fail with its error.
			pr.CloseWithError(up.err)
			return
		}
		pr.Close()
	}()
	return up, nil
}

// Write hands p to the transfer, waiting while it has a part's bytes and
// partsInFlight parts in hand.
func (up *Upload) Write(p []byte) (int, error) {
	if up.closed {
		return 0, fmt.Errorf("writing %s: upload closed", up.uri)
	}
	return up.pw.Write(p)
}

// Close sends the rest and completes the object.
func (up *Upload) Close() error {
	if up.closed {
		return up.err
	}
	up.closed = true
	up.pw.Close()
	<-up.done
	return up.err
}

// Abort stops the upload: no object is created, and a multipart upload
// started is aborted.
func (up *Upload) Abort() {
	if up.closed {
		return
	}
	up.closed = true
	up.pw.CloseWithError(errUploadAborted)
	<-up.done
	if up.err == nil { // the transfer reads the abort as its error: not reached
		up.err = fmt.Errorf("writing %s: %w", up.uri, errUploadAborted)
	}
}
