//go:build integration

package objstore_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// server starts versitygw with a bucket and returns a store client of it
// configured as drover's driver is.
func server(t *testing.T) (*testenv.S3, *objstore.Store) {
	t.Helper()
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "data"); err != nil {
		t.Fatal(err)
	}
	return srv, objstore.New(objstore.Config{Endpoint: srv.Endpoint, PathStyle: true, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
}

func put(t *testing.T, srv *testenv.S3, key, body string) {
	t.Helper()
	_, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("data"), Key: aws.String(key), Body: strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, srv *testenv.S3, key string) string {
	t.Helper()
	out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("data"), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("getting %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStore(t *testing.T) {
	srv, st := server(t)
	ctx := context.Background()
	for key, body := range map[string]string{
		"in/a.txt": "alpha\n", "in/b.txt": "beta beta\n", "in/c.log": "log\n", "in/_SUCCESS": "", "in/.hidden": "h",
		"in/sub/d.txt": "nested\n", "in/sub/e.txt": "e\n", "one.txt": "one\n", "empty/_x": "",
	} {
		put(t, srv, key, body)
	}

	t.Run("list", func(t *testing.T) {
		for _, tc := range []struct {
			path    string
			want    []string
			wantErr string
		}{
			{path: "s3://data/in", want: []string{"in/a.txt", "in/b.txt", "in/c.log"}},
			{path: "s3a://data/in/", want: []string{"in/a.txt", "in/b.txt", "in/c.log"}},
			{path: "s3://data/in/*.txt", want: []string{"in/a.txt", "in/b.txt"}},
			{path: "s3://data/in/*/*.txt", want: []string{"in/sub/d.txt", "in/sub/e.txt"}},
			{path: "s3://data/in/[ab].*", want: []string{"in/a.txt", "in/b.txt"}},
			// A glob leaves hidden names out, a job's markers among them,
			// unless its last part asks for them.
			{path: "s3://data/in/*", want: []string{"in/a.txt", "in/b.txt", "in/c.log"}},
			{path: "s3://data/in/_*", want: []string{"in/_SUCCESS"}},
			{path: "s3://data/one.txt", want: []string{"one.txt"}},
			{path: "s3://data", want: []string{"one.txt"}},
			{path: "s3://data/in/*.csv", wantErr: "no object matches s3://data/in/*.csv"},
			{path: "s3://data/nothing", wantErr: "no object matches s3://data/nothing"},
			{path: "s3://data/empty", wantErr: "directory s3://data/empty has no files"},
			{path: "s3://data/in/[", wantErr: "bad pattern"},
			{path: "s3://missing-bucket/in/*.txt", wantErr: "listing s3://missing-bucket/in/: NoSuchBucket"},
			{path: "s3://missing-bucket/x", wantErr: "listing s3://missing-bucket/x: NoSuchBucket"},
		} {
			objs, err := st.List(ctx, tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("List(%s) = %v, %v; want error containing %q", tc.path, objs, err, tc.wantErr)
				}
				continue
			}
			if err != nil {
				t.Errorf("List(%s): %v", tc.path, err)
				continue
			}
			var keys []string
			for _, o := range objs {
				keys = append(keys, o.URI.Key)
				if o.Size != int64(len(get(t, srv, o.URI.Key))) {
					t.Errorf("List(%s): %s has size %d", tc.path, o.URI, o.Size)
				}
			}
			if diff := cmp.Diff(tc.want, keys); diff != "" {
				t.Errorf("List(%s) (-want +got):\n%s", tc.path, diff)
			}
		}
	})

	t.Run("ranged read", func(t *testing.T) {
		body := strings.Repeat("0123456789", 20000) // several GETs of readAhead (64 KiB)
		put(t, srv, "r/digits", body)
		u := objstore.URI{Bucket: "data", Key: "r/digits"}
		rc, err := st.OpenRange(ctx, u, "", 995, 10)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != body[995:1005] {
			t.Errorf("OpenRange(995, 10) = %q, want %q", b, body[995:1005])
		}
		// Sequential reads across a GET boundary and past the split's end.
		r := st.NewReaderAt(ctx, u, "", int64(len(body)), 100)
		defer r.Close()
		var got []byte
		buf := make([]byte, 4096)
		for off := int64(50); ; {
			n, err := r.ReadAt(buf, off)
			got = append(got, buf[:n]...)
			off += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if string(got) != body[50:] {
			t.Errorf("ReaderAt read %d bytes, want the %d after offset 50", len(got), len(body)-50)
		}
		if size, err := st.Size(ctx, u); err != nil || size != int64(len(body)) {
			t.Errorf("Size = %d, %v; want %d", size, err, len(body))
		}
	})

	t.Run("multipart write", func(t *testing.T) {
		st := objstore.New(objstore.Config{Endpoint: srv.Endpoint, PathStyle: true, Region: srv.Region,
			AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PartSize: 5 << 20}) // S3's smallest part
		want := bytes.Repeat([]byte("multipart line\n"), (11<<20)/15)
		w, err := st.Create(ctx, objstore.URI{Bucket: "data", Key: "w/big"})
		if err != nil {
			t.Fatal(err)
		}
		for b := want; len(b) > 0; {
			n := min(len(b), 100000)
			if _, err := w.Write(b[:n]); err != nil {
				t.Fatal(err)
			}
			b = b[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := get(t, srv, "w/big"); got != string(want) {
			t.Errorf("the object has %d bytes, want %d", len(got), len(want))
		}
		// Small: one PUT. Aborted: nothing.
		w, _ = st.Create(ctx, objstore.URI{Bucket: "data", Key: "w/small"})
		w.Write([]byte("small\n"))
		if err := w.Close(); err != nil || get(t, srv, "w/small") != "small\n" {
			t.Errorf("small object: %v", err)
		}
		w, _ = st.Create(ctx, objstore.URI{Bucket: "data", Key: "w/aborted"})
		w.Write(want)
		w.Abort()
		if ok, err := st.Exists(ctx, objstore.URI{Bucket: "data", Key: "w/aborted"}); ok || err != nil {
			t.Errorf("aborted object exists: %v, %v", ok, err)
		}
		ups, err := srv.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("data")})
		if err != nil || len(ups.Uploads) != 0 {
			t.Errorf("open uploads after abort: %v, %v", ups, err)
		}
		// A task cancelled while its parts upload in the background: the
		// next write fails, and the upload is aborted, not left open.
		cctx, cancel := context.WithCancel(ctx)
		w, _ = st.Create(cctx, objstore.URI{Bucket: "data", Key: "w/cancelled"})
		if _, err := w.Write(want); err != nil {
			t.Fatal(err)
		}
		cancel()
		_, err = w.Write(want)
		if err == nil {
			err = w.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "writing s3://data/w/cancelled") || !errors.Is(err, context.Canceled) {
			t.Errorf("writing after the context was cancelled: %v", err)
		}
		if _, err := w.Stage(); err == nil {
			t.Errorf("Stage after a failure succeeded")
		}
		ups, err = srv.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("data")})
		if err != nil || len(ups.Uploads) != 0 {
			t.Errorf("open uploads after a cancelled write: %v, %v", ups.Uploads, err)
		}
	})

	t.Run("copy and delete", func(t *testing.T) {
		put(t, srv, "c/src one", "to copy\n")
		src, dst := objstore.URI{Bucket: "data", Key: "c/src one"}, objstore.URI{Bucket: "data", Key: "c/out/dst"}
		if err := st.Copy(ctx, src, dst); err != nil {
			t.Fatal(err)
		}
		if got := get(t, srv, "c/out/dst"); got != "to copy\n" {
			t.Errorf("copy = %q", got)
		}
		// Larger than one CopyObject may copy: in parts (5 MiB is S3's smallest).
		big := strings.Repeat("0123456789abcdef", (11<<20)/16)
		put(t, srv, "c/big", big)
		inParts := objstore.New(objstore.Config{Endpoint: srv.Endpoint, PathStyle: true, Region: srv.Region,
			AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, MaxCopySize: 5 << 20, CopyPartSize: 5 << 20})
		err := inParts.Copy(ctx, objstore.URI{Bucket: "data", Key: "c/big"}, objstore.URI{Bucket: "data", Key: "c/out/big"})
		if err != nil {
			t.Fatal(err)
		}
		if got := get(t, srv, "c/out/big"); got != big {
			t.Errorf("copy in parts has %d bytes, want %d", len(got), len(big))
		}
		if err := st.Delete(ctx, src, objstore.URI{Bucket: "data", Key: "c/never-there"}); err != nil {
			t.Fatal(err)
		}
		if ok, _ := st.Exists(ctx, src); ok {
			t.Errorf("%s exists after Delete", src)
		}
		if ok, _ := st.Exists(ctx, objstore.URI{Bucket: "data", Key: "c/out"}); !ok {
			t.Errorf("the prefix c/out does not exist")
		}
		// An upload left open by a task that died is aborted by RemovePrefix.
		_, err = srv.Client().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("data"), Key: aws.String("c/out/tmp")})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.RemovePrefix(ctx, objstore.URI{Bucket: "data", Key: "c"}); err != nil {
			t.Fatal(err)
		}
		if ok, _ := st.Exists(ctx, objstore.URI{Bucket: "data", Key: "c"}); ok {
			t.Errorf("objects left under c/ after RemovePrefix")
		}
		ups, err := srv.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("data")})
		if err != nil || len(ups.Uploads) != 0 {
			t.Errorf("open uploads after RemovePrefix: %v, %v", ups.Uploads, err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		missing := objstore.URI{Bucket: "missing-bucket", Key: "x"}
		_, err := st.Size(ctx, missing)
		var oe *objstore.Error
		t.Logf("missing bucket: %v", err)
		if !errors.As(err, &oe) || oe.URI != "s3://missing-bucket/x" {
			t.Errorf("Size of a missing bucket's object: %v", err)
		}
		bad := objstore.New(objstore.Config{Endpoint: srv.Endpoint, PathStyle: true, AccessKey: srv.AccessKey, SecretKey: "wrong"})
		_, err = bad.List(ctx, "s3://data/in")
		t.Logf("wrong secret: %v", err)
		if err == nil || !strings.Contains(err.Error(), "s3://data/in") || !strings.Contains(err.Error(), "check the credentials") {
			t.Errorf("wrong secret: %v", err)
		}
		w, err := st.Create(ctx, objstore.URI{Bucket: "missing-bucket", Key: "x"})
		if err == nil {
			w.Write([]byte("x"))
			err = w.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "writing s3://missing-bucket/x: NoSuchBucket") {
			t.Errorf("writing into a missing bucket: %v", err)
		}
	})
}

// TestPendingCommit: a staged object is invisible until Complete; of two
// uploads to one key, only the completed one's bytes appear, and
// AbortUploads drops the other; List refuses a directory, or a glob's
// files in it, holding _PENDING without _SUCCESS.
func TestPendingCommit(t *testing.T) {
	srv, st := server(t)
	ctx := context.Background()
	key := objstore.URI{Bucket: "data", Key: "out/part-00000"}
	stage := func(body string) objstore.Pending {
		t.Helper()
		w, err := st.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
		p, err := w.Stage()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	put(t, srv, "out/_PENDING", "job")
	loser, winner := stage("first attempt\n"), stage("second attempt\n")
	empty := objstore.URI{Bucket: "data", Key: "out/part-00001"}
	w, err := st.Create(ctx, empty)
	if err != nil {
		t.Fatal(err)
	}
	emptyPending, err := w.Stage()
	if err != nil {
		t.Fatal(err)
	}
	if loser.UploadID == winner.UploadID {
		t.Fatalf("two attempts share upload %s", loser.UploadID)
	}
	if ok, err := st.Exists(ctx, key); ok || err != nil {
		t.Errorf("a staged object exists before Complete: %v, %v", ok, err)
	}
	if _, err := st.List(ctx, "s3://data/out"); err == nil || !strings.Contains(err.Error(), "s3://data/out/ is the output of a job that has not committed") {
		t.Errorf("List before the commit: err = %v", err)
	}
	for _, p := range []objstore.Pending{winner, emptyPending} {
		if err := st.Complete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Parts visible, no _SUCCESS yet: a driver killed while committing.
	for _, p := range []string{"s3://data/out", "s3://data/out/part-*", "s3://data/*/part-00000"} {
		if _, err := st.List(ctx, p); err == nil || !strings.Contains(err.Error(), "s3://data/out/ is the output of a job that has not committed") {
			t.Errorf("List(%s) during the commit: err = %v", p, err)
		}
	}
	put(t, srv, "out/_SUCCESS", "")
	n, err := st.AbortUploads(ctx, objstore.URI{Bucket: "data", Key: "out"})
	if err != nil || n != 1 {
		t.Errorf("AbortUploads = %d, %v; want the losing attempt's 1", n, err)
	}
	if got := get(t, srv, "out/part-00000"); got != "second attempt\n" {
		t.Errorf("part-00000 = %q, want the completed attempt's", got)
	}
	if got := get(t, srv, "out/part-00001"); got != "" {
		t.Errorf("part-00001 = %q, want empty", got)
	}
	objs, err := st.List(ctx, "s3://data/out/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.URI.Key)
	}
	if diff := cmp.Diff([]string{"out/part-00000", "out/part-00001"}, keys); diff != "" {
		t.Errorf("List after _SUCCESS (-want +got):\n%s", diff)
	}
}

// TestReadsOfAListedVersion: reads given the ETag a listing reported read
// that version; once the object is rewritten they fail with ErrChanged,
// where a read without it gets the new bytes at the old offsets.
func TestReadsOfAListedVersion(t *testing.T) {
	srv, st := server(t)
	ctx := context.Background()
	first := strings.Repeat("first version\n", 10000)
	put(t, srv, "v/file", first)
	objs, err := st.List(ctx, "s3://data/v/file")
	if err != nil || len(objs) != 1 || objs[0].ETag == "" {
		t.Fatalf("List = %v, %v; want one object with an ETag", objs, err)
	}
	listed, _ := st.List(ctx, "s3://data/v/")
	if len(listed) != 1 || listed[0].ETag != objs[0].ETag {
		t.Errorf("a directory's listing gives %v, the object's HEAD %s", listed, objs[0].ETag)
	}
	o := objs[0]
	r := st.NewReaderAt(ctx, o.URI, o.ETag, o.Size, 0)
	defer r.Close()
	buf := make([]byte, 14)
	if _, err := r.ReadAt(buf, 0); err != nil || string(buf) != "first version\n" {
		t.Fatalf("ReadAt of the listed version = %q, %v", buf, err)
	}

	put(t, srv, "v/file", strings.Repeat("the second one\n", 10000))
	if _, err := r.ReadAt(buf, 70000); !errors.Is(err, objstore.ErrChanged) || !strings.Contains(err.Error(), "reading s3://data/v/file") {
		t.Errorf("ReadAt after a rewrite: %v; want ErrChanged naming the object", err)
	}
	if _, err := st.OpenRange(ctx, o.URI, o.ETag, 0, -1); !errors.Is(err, objstore.ErrChanged) {
		t.Errorf("OpenRange after a rewrite: %v; want ErrChanged", err)
	}
	rc, err := st.OpenRange(ctx, o.URI, "", 0, 15)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "the second one\n" {
		t.Errorf("OpenRange of any version = %q", b)
	}
}

// TestPutIfAbsent: of two writes of one key, the second finds it there.
func TestPutIfAbsent(t *testing.T) {
	srv, st := server(t)
	ctx := context.Background()
	u := objstore.URI{Bucket: "data", Key: "once/_PENDING"}
	if err := st.PutIfAbsent(ctx, u, []byte("first\n")); err != nil {
		t.Fatal(err)
	}
	err := st.PutIfAbsent(ctx, u, []byte("second\n"))
	if !errors.Is(err, objstore.ErrExists) || !strings.Contains(err.Error(), "writing s3://data/once/_PENDING") {
		t.Errorf("the second write: %v; want ErrExists naming the object", err)
	}
	if got := get(t, srv, "once/_PENDING"); got != "first\n" {
		t.Errorf("the object = %q, want the first write's", got)
	}

	// A store that does not implement the condition gets a plain write.
	proxy := testenv.SignedProxy(t, srv.Endpoint, nil)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			storeError(w, http.StatusNotImplemented, "NotImplemented", "A header you provided implies functionality that is not implemented")
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	viaFront := objstore.New(objstore.Config{Endpoint: front.URL, PathStyle: true, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
	if err := viaFront.PutIfAbsent(ctx, objstore.URI{Bucket: "data", Key: "plain/_PENDING"}, []byte("plain\n")); err != nil {
		t.Errorf("PutIfAbsent on a store without conditional writes: %v", err)
	}
	if got := get(t, srv, "plain/_PENDING"); got != "plain\n" {
		t.Errorf("the object = %q", got)
	}
}

// TestRemovePrefixRemovesThePendingMarkerLast: when the store refuses to
// delete one part of a failed job's output, RemovePrefix fails and the
// output keeps its _PENDING marker, so it still reads as uncommitted; once
// the store deletes everything, the marker goes too. The marker comes
// first in a listing, and a removal that deleted it with the parts left a
// half-removed output that read as a complete job's.
func TestRemovePrefixRemovesThePendingMarkerLast(t *testing.T) {
	srv, st := server(t)
	ctx := context.Background()
	for _, k := range []string{"out/_PENDING", "out/part-00000", "out/part-00001"} {
		put(t, srv, k, k+"\n")
	}
	// The front answers DeleteObjects itself, deleting each key in the
	// store but the refused one, as a store answers a partial failure.
	var refused atomic.Value
	refused.Store("out/part-00001")
	proxy := testenv.SignedProxy(t, srv.Endpoint, nil)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !r.URL.Query().Has("delete") {
			proxy.ServeHTTP(w, r)
			return
		}
		var req struct {
			Objects []struct{ Key string } `xml:"Object"`
		}
		if err := xml.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("a DeleteObjects body: %v", err)
		}
		var errs strings.Builder
		for _, o := range req.Objects {
			if o.Key == refused.Load() {
				fmt.Fprintf(&errs, "<Error><Key>%s</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>", o.Key)
				continue
			}
			if _, err := srv.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("data"), Key: aws.String(o.Key)}); err != nil {
				t.Errorf("deleting %s: %v", o.Key, err)
			}
		}
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`+
			errs.String()+`</DeleteResult>`)
	}))
	defer front.Close()
	viaFront := objstore.New(objstore.Config{Endpoint: front.URL, PathStyle: true, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
	out := objstore.URI{Bucket: "data", Key: "out"}

	err := viaFront.RemovePrefix(ctx, out)
	if err == nil || !strings.Contains(err.Error(), "out/part-00001: AccessDenied") {
		t.Errorf("RemovePrefix with one delete refused: %v", err)
	}
	if ok, err := st.Exists(ctx, out.Join(objstore.PendingMarker)); !ok || err != nil {
		t.Errorf("the pending marker is gone after a failed removal: %v, %v", ok, err)
	}
	if objs, err := st.List(ctx, "s3://data/out"); err == nil || !strings.Contains(err.Error(), "has not committed") {
		t.Errorf("List of a half-removed output = %v, %v; want it refused as uncommitted", objs, err)
	}

	refused.Store("")
	if err := viaFront.RemovePrefix(ctx, out); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Exists(ctx, out); ok || err != nil {
		t.Errorf("objects left under out/ after RemovePrefix: %v, %v", ok, err)
	}
}

// TestCompleteRetriedAfterSuccess: a completion whose answer is lost (here
// a gateway's 502 after the store completed the upload) is retried by the
// SDK, and S3 answers the retry NoSuchUpload; the object is there with
// this upload's ETag, so Complete succeeds. A NoSuchUpload for an upload
// that did not make the object at its key stays an error.
func TestCompleteRetriedAfterSuccess(t *testing.T) {
	srv, st := server(t)
	ctx := context.Background()
	proxy := testenv.SignedProxy(t, srv.Endpoint, nil)
	// forward says whether the next completion reaches the store.
	var forward atomic.Bool
	var completions atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !r.URL.Query().Has("uploadId") {
			proxy.ServeHTTP(w, r)
			return
		}
		completions.Add(1)
		if forward.Swap(false) {
			rec := httptest.NewRecorder()
			proxy.ServeHTTP(rec, r)
			if rec.Code != http.StatusOK {
				t.Errorf("the store's answer to the completion: %d %s", rec.Code, rec.Body)
			}
			w.WriteHeader(http.StatusBadGateway) // the answer lost
			return
		}
		storeError(w, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist.")
	}))
	defer front.Close()
	viaFront := objstore.New(objstore.Config{Endpoint: front.URL, PathStyle: true, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, MaxBackoff: time.Millisecond})
	stage := func(key, body string) objstore.Pending {
		t.Helper()
		w, err := st.Create(ctx, objstore.URI{Bucket: "data", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
		p, err := w.Stage()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	done := stage("out/part-00000", "completed once\n")
	forward.Store(true)
	if err := viaFront.Complete(ctx, done); err != nil {
		t.Errorf("a retried completion of an upload the store completed: %v", err)
	}
	if n := completions.Load(); n != 2 {
		t.Errorf("%d completion requests, want the first and one retry", n)
	}
	if got := get(t, srv, "out/part-00000"); got != "completed once\n" {
		t.Errorf("the object = %q", got)
	}

	// Another upload to the same key, never completed: the object there is
	// not its.
	other := stage("out/part-00000", "another attempt\n")
	err := viaFront.Complete(ctx, other)
	if err == nil || !strings.Contains(err.Error(), "completing the upload of s3://data/out/part-00000: NoSuchUpload") {
		t.Errorf("NoSuchUpload for an upload whose object is not at its key: %v", err)
	}
	// No object at all.
	missing := stage("out/part-00001", "aborted\n")
	if _, err := st.AbortUploads(ctx, objstore.URI{Bucket: "data", Key: "out"}); err != nil {
		t.Fatal(err)
	}
	if err := viaFront.Complete(ctx, missing); err == nil || !strings.Contains(err.Error(), "NoSuchUpload") {
		t.Errorf("NoSuchUpload for an aborted upload: %v", err)
	}
}

// TestReaderAtExpect: without a split's end (a Parquet file's reader), a
// GET asks for what a read needs, or for all of a range the caller said it
// would read in order, and nothing past it.
func TestReaderAtExpect(t *testing.T) {
	srv, _ := server(t)
	ctx := context.Background()
	body := strings.Repeat("0123456789", 20000)
	put(t, srv, "p/file", body)
	var mu sync.Mutex
	var ranges []string
	proxy := testenv.SignedProxy(t, srv.Endpoint, func(r *httputil.ProxyRequest) {
		if r.In.Method == http.MethodGet {
			mu.Lock()
			ranges = append(ranges, r.In.Header.Get("Range"))
			mu.Unlock()
		}
	})
	front := httptest.NewServer(proxy)
	defer front.Close()
	st := objstore.New(objstore.Config{Endpoint: front.URL, PathStyle: true, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
	r := st.NewReaderAt(ctx, objstore.URI{Bucket: "data", Key: "p/file"}, "", int64(len(body)), 0)
	defer r.Close()
	r.Expect(1000, 50000)
	buf := make([]byte, 4096)
	var got []byte
	for off := int64(1000); off < 51000; {
		n, err := r.ReadAt(buf[:min(4096, 51000-off)], off)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
		off += int64(n)
	}
	if string(got) != body[1000:51000] {
		t.Errorf("read %d bytes of the expected range, not its bytes", len(got))
	}
	if _, err := r.ReadAt(buf[:100], 60000); err != nil || string(buf[:100]) != body[60000:60100] {
		t.Errorf("read outside the range: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"bytes=1000-50999", "bytes=60000-60099"}, ranges); diff != "" {
		t.Errorf("GETs (-want +got):\n%s", diff)
	}
}

// TestUnsignedPayloadOverHTTP: over plain http, a part goes with an
// unsigned payload and a CRC32 of it in a header the signature covers, so
// the store still refuses a part whose bytes changed on the way (the
// CRC32 does not match) or whose CRC32 changed (the signature does not).
func TestUnsignedPayloadOverHTTP(t *testing.T) {
	srv, _ := server(t)
	ctx := context.Background()
	type seen struct{ payloadHash, crc32, signedHeaders string }
	for _, tc := range []struct {
		name    string
		tamper  func(r *http.Request) // a part's request on its way
		wantErr string                // "" when the part must arrive whole
	}{
		{name: "intact"},
		{name: "a byte of the body changed", tamper: func(r *http.Request) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
			}
			b[len(b)/2] ^= 1
			r.Body = io.NopCloser(bytes.NewReader(b))
		}, wantErr: "BadDigest"},
		{name: "the CRC32 replaced", tamper: func(r *http.Request) {
			r.Header.Set("X-Amz-Checksum-Crc32", "AAAAAA==")
		}, wantErr: "SignatureDoesNotMatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var parts []seen
			proxy := testenv.SignedProxy(t, srv.Endpoint, func(r *httputil.ProxyRequest) {
				if r.In.Method != http.MethodPut || !r.In.URL.Query().Has("partNumber") {
					return
				}
				_, signed, _ := strings.Cut(r.In.Header.Get("Authorization"), "SignedHeaders=")
				signed, _, _ = strings.Cut(signed, ",")
				mu.Lock()
				parts = append(parts, seen{r.In.Header.Get("X-Amz-Content-Sha256"), r.In.Header.Get("X-Amz-Checksum-Crc32"), signed})
				mu.Unlock()
				if tc.tamper != nil {
					tc.tamper(r.Out)
				}
			})
			front := httptest.NewServer(proxy)
			defer front.Close()
			st := objstore.New(objstore.Config{Endpoint: front.URL, PathStyle: true, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
			u := objstore.URI{Bucket: "data", Key: "unsigned/" + strings.ReplaceAll(tc.name, " ", "-")}
			w, err := st.Create(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			body := strings.Repeat("0123456789abcdef", 4096)
			io.WriteString(w, body)
			p, err := w.Stage()
			if err == nil {
				err = st.Complete(ctx, p)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := get(t, srv, u.Key); got != body {
					t.Errorf("the object has %d bytes, not the %d written", len(got), len(body))
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("staging a tampered part: %v, want an error with %s", err, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(parts) == 0 {
				t.Fatal("no part went through the proxy")
			}
			for _, s := range parts {
				if s.payloadHash != "UNSIGNED-PAYLOAD" || s.crc32 == "" || !strings.Contains(s.signedHeaders, "x-amz-checksum-crc32") {
					t.Errorf("a part sent with X-Amz-Content-Sha256 %q, X-Amz-Checksum-Crc32 %q, SignedHeaders %q; want UNSIGNED-PAYLOAD and a signed CRC32",
						s.payloadHash, s.crc32, s.signedHeaders)
				}
			}
		})
	}
}

// TestUpload: an object written through the transfer manager appears whole
// when closed, in one PUT or in parts, and an aborted one leaves neither an
// object nor an open upload.
func TestUpload(t *testing.T) {
	srv, st := server(t)
	ctx := context.Background()
	big := strings.Repeat("0123456789abcdef", (objstore.DefaultPartSize+3<<20)/16) // two parts
	for _, tc := range []struct {
		name, body string
		abort      bool
	}{
		{name: "empty"},
		{name: "small", body: "one line\n"},
		{name: "parts", body: big},
		{name: "aborted-small", body: "one line\n", abort: true},
		{name: "aborted-parts", body: big, abort: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := objstore.URI{Bucket: "data", Key: "upload/" + tc.name}
			up, err := st.Upload(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			for b := tc.body; len(b) > 0; {
				n := min(len(b), 100000)
				if _, err := io.WriteString(up, b[:n]); err != nil {
					t.Fatal(err)
				}
				b = b[n:]
			}
			if tc.abort {
				up.Abort()
				if _, err := st.Size(ctx, u); err == nil {
					t.Errorf("an aborted upload made %s", u)
				}
				out, err := srv.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("data"), Prefix: aws.String(u.Key)})
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Uploads) != 0 {
					t.Errorf("an aborted upload left %d multipart uploads open", len(out.Uploads))
				}
				return
			}
			if err := up.Close(); err != nil {
				t.Fatal(err)
			}
			if got := get(t, srv, u.Key); got != tc.body {
				t.Errorf("the object has %d bytes, want the %d written", len(got), len(tc.body))
			}
		})
	}
}
