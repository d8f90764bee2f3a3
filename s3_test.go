//go:build integration

package drover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/commit"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// s3Keys lists the bucket's keys under prefix.
func s3Keys(t *testing.T, srv *testenv.S3, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	pages := s3.NewListObjectsV2Paginator(srv.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatalf("listing %s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

func s3Put(t *testing.T, srv *testenv.S3, bucket, key, body string) {
	t.Helper()
	_, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
}

func s3Get(t *testing.T, srv *testenv.S3, bucket, key string) string {
	t.Helper()
	out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("getting %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestObjectStorageWordCount reads a word count's input from a real S3
// server (versitygw) with an s3a:// glob, in many splits that executors
// read with ranged GETs, writes the result to s3://, and reads it back.
// Executor processes get only the endpoint settings from the driver and
// their credentials from the environment (testenv.NewS3 sets AWS_*).
func TestObjectStorageWordCount(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "books"); err != nil {
		t.Fatal(err)
	}
	lines := generatedLines(6000)
	var want = referenceWordCount(lines)
	for i, part := range [][]string{lines[:2500], lines[2500:2501], lines[2501:]} {
		s3Put(t, srv, "books", fmt.Sprintf("in/book%d.txt", i), strings.Join(part, "\n")+"\n")
	}
	s3Put(t, srv, "books", "in/notes.md", "not read\n")
	s3Put(t, srv, "books", "in/sub/deeper.txt", "not read either\n")
	s3Put(t, srv, "books", "in/empty.txt", "")

	for i, master := range masters {
		t.Run(master, func(t *testing.T) {
			out := fmt.Sprintf("s3://books/out%d", i)
			runJob(t, master, func(ctx *Context) error {
				text := TextFile(ctx, "s3a://books/in/*.txt")
				if n := text.NumPartitions(); n < 10 {
					t.Errorf("the input has %d partitions, want many splits of 7000 bytes", n)
				}
				counts := ReduceByKey(FlatMap(text, testWords), testSum, 3)
				got, err := counts.Collect()
				if err != nil {
					return err
				}
				gotMap := map[string]int{}
				for _, kv := range got {
					gotMap[kv.Key] = kv.Value
				}
				if diff := gocmp.Diff(want, gotMap); diff != "" {
					t.Errorf("word counts from s3a:// (-want +got):\n%s", diff)
				}
				if err := counts.SaveAsTextFile(out); err != nil {
					return err
				}
				if err := counts.SaveAsTextFile(out); err == nil || !strings.Contains(err.Error(), "already exists") {
					t.Errorf("saving into an existing prefix: err = %v, want 'already exists'", err)
				}
				// Read back through drover, from the directory.
				n, err := TextFile(ctx, out).Count()
				if err != nil {
					return err
				}
				if n != int64(len(want)) {
					t.Errorf("read back %d lines from %s, want %d", n, out, len(want))
				}
				return nil
			}, append(srv.Conf(), "spark.files.maxPartitionBytes=7000")...) // many splits: lines cut at split ends
			key := strings.TrimPrefix(out, "s3://books/")
			keys := s3Keys(t, srv, "books", key+"/")
			wantKeys := []string{key + "/_SUCCESS", key + "/part-00000", key + "/part-00001", key + "/part-00002"}
			if diff := gocmp.Diff(wantKeys, keys); diff != "" {
				t.Errorf("objects of the output (-want +got):\n%s", diff)
			}
			var text []string
			for _, k := range keys {
				if body := s3Get(t, srv, "books", k); body != "" {
					text = append(text, strings.Split(strings.TrimSuffix(body, "\n"), "\n")...)
				}
			}
			var wantText []string
			for w, c := range want {
				wantText = append(wantText, fmt.Sprintf("{%s %d}", w, c))
			}
			slices.Sort(text)
			slices.Sort(wantText)
			if diff := gocmp.Diff(wantText, text); diff != "" {
				t.Errorf("the output's lines (-want +got):\n%s", diff)
			}
			if left := s3Keys(t, srv, "books", "."); len(left) != 0 {
				t.Errorf("temporary objects left after the job: %v", left)
			}
		})
	}
}

// TestObjectStorageFailedJobLeavesNoOutput: a task fails after others have
// uploaded their parts; no object is left under the output prefix, nor in
// the temporary one.
func TestObjectStorageFailedJobLeavesNoOutput(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "results"); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	var jobErr error
	args := []string{"--master", "local-cluster[2,1,256]", "--conf", "spark.task.maxFailures=2", "--conf", "drover.log.level=error"}
	for _, c := range srv.Conf() {
		args = append(args, "--conf", c)
	}
	code := runDriver(args, &stderr, func(ctx *Context) error {
		jobErr = Map(Parallelize(ctx, []string{"ok", "fine", "bad", "good"}, 4), testPanicBad).SaveAsTextFile("s3a://results/out")
		return jobErr
	})
	if code != 1 || jobErr == nil || !strings.Contains(jobErr.Error(), "cannot handle bad") {
		t.Fatalf("exit code %d, err %v; want a failed job:\n%s", code, jobErr, stderr.String())
	}
	if left := s3Keys(t, srv, "results", ""); len(left) != 0 {
		t.Errorf("a failed job left objects in the bucket: %v", left)
	}
	ups, err := srv.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String("results")})
	if err != nil || len(ups.Uploads) != 0 {
		t.Errorf("a failed job left uploads open: %v, %v", ups, err)
	}
}

// TestObjectStorageBadInput: each mistake is one error naming the path,
// before any task runs.
func TestObjectStorageBadInput(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "data"); err != nil {
		t.Fatal(err)
	}
	runJob(t, "local[2]", func(ctx *Context) error {
		for _, tc := range []struct{ path, want string }{
			{"gs://data/x.txt", `path "gs://data/x.txt": unsupported scheme gs://`},
			{"s3://Bad_Bucket/x", `path "s3://Bad_Bucket/x": bucket name "Bad_Bucket"`},
			{"s3:///x", `path "s3:///x": no bucket name`},
			{"s3://no-such-bucket/in/*.txt", "listing s3://no-such-bucket/in/: NoSuchBucket"},
			{"s3://data/in/*.txt", "no object matches s3://data/in/*.txt"},
			{"s3a://data/in/[", "bad pattern"},
		} {
			_, err := TextFile(ctx, tc.path).Count()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("TextFile(%s): err = %v, want one line containing %q", tc.path, err, tc.want)
			}
		}
		words := Parallelize(ctx, []string{"a"}, 1)
		for _, tc := range []struct{ path, want string }{
			{"s3://no-such-bucket/out", "listing s3://no-such-bucket/out: NoSuchBucket"},
			{"s3://data", "name a prefix in the bucket"},
			{"hdfs://nn/out", "unsupported scheme hdfs://"},
		} {
			err := words.SaveAsTextFile(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("SaveAsTextFile(%s): err = %v, want %q", tc.path, err, tc.want)
			}
		}
		return nil
	}, srv.Conf()...)
}

// TestObjectStorageInputRewritten: a dataset's splits are of the versions
// the driver listed; input rewritten before a later action fails its tasks
// with the reason, where they read the new bytes at the old offsets (lines
// cut at the old size, or lost and doubled at split ends).
func TestObjectStorageInputRewritten(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "data"); err != nil {
		t.Fatal(err)
	}
	s3Put(t, srv, "data", "in.txt", strings.Repeat("a line\n", 1000))
	runJob(t, "local[2]", func(ctx *Context) error {
		lines := TextFile(ctx, "s3://data/in.txt")
		if n, err := lines.Count(); err != nil || n != 1000 {
			t.Errorf("Count = %d, %v; want 1000", n, err)
		}
		s3Put(t, srv, "data", "in.txt", strings.Repeat("a longer line\n", 1000))
		n, err := lines.Count()
		if err == nil || !strings.Contains(err.Error(), "reading s3://data/in.txt: the object changed since it was listed") {
			t.Errorf("Count after the input was rewritten = %d, %v; want the change named", n, err)
		}
		return nil
	}, append(srv.Conf(), "spark.task.maxFailures=1")...)
}

// TestObjectStorageStragglerAfterCommit: an upload that starts under a
// committed output after its job's own sweep (an attempt running on an
// executor thought lost) is aborted when the application stops, as after a
// failed job, not left open and billed; one of another job's output inside
// it is left alone.
func TestObjectStorageStragglerAfterCommit(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "results"); err != nil {
		t.Fatal(err)
	}
	runJob(t, "local[2]", func(ctx *Context) error {
		if err := Parallelize(ctx, []string{"a", "b"}, 2).SaveAsTextFile("s3://results/out"); err != nil {
			return err
		}
		// The straggler: an attempt of partition 1 that outlived the job;
		// and a part of another job's output inside out/, which is not
		// this job's to abort.
		for _, key := range []string{"out/part-00001", "out/inner/part-00000"} {
			if _, err := srv.Client().CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{
				Bucket: aws.String("results"), Key: aws.String(key)}); err != nil {
				return err
			}
		}
		return nil
	}, srv.Conf()...)
	if diff := gocmp.Diff([]string{"out/inner/part-00000"}, s3Uploads(t, srv, "results")); diff != "" {
		t.Errorf("uploads open after the application stopped (-want +got):\n%s", diff)
	}
	if got := s3Get(t, srv, "results", "out/part-00001"); got != "b\n" {
		t.Errorf("part-00001 = %q, want the committed attempt's", got)
	}
}

// TestObjectStorageOutputInsideAnUncommittedOne: an output inside another
// job's uncommitted output is refused before any task runs: that job's
// clean-up or sweep would take its parts and uploads.
func TestObjectStorageOutputInsideAnUncommittedOne(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "results"); err != nil {
		t.Fatal(err)
	}
	s3Put(t, srv, "results", "out/_PENDING", "drover job output, uncommitted\n")
	runJob(t, "local[2]", func(ctx *Context) error {
		err := Parallelize(ctx, []string{"a"}, 1).SaveAsTextFile("s3://results/out/day/x")
		if err == nil || !strings.Contains(err.Error(), "output s3://results/out/day/x is inside s3://results/out, the uncommitted output of another job") {
			t.Errorf("SaveAsTextFile inside an uncommitted output: %v", err)
		}
		return nil
	}, srv.Conf()...)
	if keys := s3Keys(t, srv, "results", ""); len(keys) != 1 {
		t.Errorf("objects after the refusal: %v, want only the other job's marker", keys)
	}

	// A committed output whose marker's delete failed holds both markers:
	// writing inside it is allowed.
	s3Put(t, srv, "results", "out/_SUCCESS", "")
	runJob(t, "local[2]", func(ctx *Context) error {
		return Parallelize(ctx, []string{"a"}, 1).SaveAsTextFile("s3://results/out/day")
	}, srv.Conf()...)

	// Another job begins writing a prefix above while this one begins: the
	// other's marker lands just after this one's; this job looks again once
	// its own is written, steps back and removes its marker.
	proxy := testenv.SignedProxy(t, srv.Endpoint, nil)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxy.ServeHTTP(w, r)
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/race/in/_PENDING") {
			s3Put(t, srv, "results", "race/_PENDING", "another job\n")
		}
	}))
	defer front.Close()
	runJob(t, "local[2]", func(ctx *Context) error {
		err := Parallelize(ctx, []string{"a"}, 1).SaveAsTextFile("s3://results/race/in")
		if err == nil || !strings.Contains(err.Error(), "is inside s3://results/race, the uncommitted output of another job") {
			t.Errorf("SaveAsTextFile racing with a job above: %v", err)
		}
		return nil
	}, append(srv.Conf(), "spark.hadoop.fs.s3a.endpoint="+front.URL)...)
	if diff := gocmp.Diff([]string{"race/_PENDING"}, s3Keys(t, srv, "results", "race/")); diff != "" {
		t.Errorf("objects after stepping back (-want +got):\n%s", diff)
	}
}

// TestObjectStorageMarkerStoredByALostAnswer: the first write of _PENDING
// is stored but its answer lost (a gateway's 502); the SDK's retry meets
// the job's own marker (412 to If-None-Match: *), which the job recognises
// by its token and goes on, where it refused its own output as another
// job's and left the marker behind.
func TestObjectStorageMarkerStoredByALostAnswer(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "results"); err != nil {
		t.Fatal(err)
	}
	proxy := testenv.SignedProxy(t, srv.Endpoint, nil)
	var lost atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/_PENDING") && lost.CompareAndSwap(false, true) {
			proxy.ServeHTTP(httptest.NewRecorder(), r)
			w.WriteHeader(http.StatusBadGateway) // the answer lost
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	runJob(t, "local[2]", func(ctx *Context) error {
		return Parallelize(ctx, []string{"a", "b"}, 2).SaveAsTextFile("s3://results/out")
	}, append(srv.Conf(), "spark.hadoop.fs.s3a.endpoint="+front.URL)...)
	if !lost.Load() {
		t.Fatal("the marker's write never passed the front")
	}
	want := []string{"out/_SUCCESS", "out/part-00000", "out/part-00001"}
	if diff := gocmp.Diff(want, s3Keys(t, srv, "results", "")); diff != "" {
		t.Errorf("objects after the job (-want +got):\n%s", diff)
	}
}

// TestObjectStorageExecutorsGetNoSecrets: the driver's keys in
// spark.hadoop.fs.s3a.access.key and .secret.key are not sent to executors;
// without credentials in their own environment, their reads are refused
// while the driver's listing works.
func TestObjectStorageExecutorsGetNoSecrets(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "data"); err != nil {
		t.Fatal(err)
	}
	s3Put(t, srv, "data", "in.txt", "a b c\n")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	var stderr bytes.Buffer
	var jobErr error
	args := []string{"--master", "local-cluster[1,1,256]", "--conf", "spark.task.maxFailures=1", "--conf", "drover.log.level=error"}
	for _, c := range srv.Conf() {
		args = append(args, "--conf", c)
	}
	runDriver(args, &stderr, func(ctx *Context) error {
		_, jobErr = TextFile(ctx, "s3://data/in.txt").Count()
		return jobErr
	})
	if jobErr == nil || !strings.Contains(jobErr.Error(), "reading s3://data/in.txt") {
		t.Fatalf("executors without credentials: err = %v; want their read refused:\n%s", jobErr, stderr.String())
	}
	t.Logf("executors without credentials: %v", jobErr)
}

// s3BigPartLines is more lines of 1 KiB than one upload part holds, so a
// task writing them has uploaded a part before it ends.
const s3BigPartLines = 9 << 10

// testS3Part writes a partition for the commit tests: "empty" nothing,
// "small" two lines, any other record (a marker file's path) 9 MiB; the
// first task given that path creates the file and kills its executor
// process once its first part is uploaded, leaving that upload open.
var testS3Part = RegisterFlatMap("test.s3Part", func(rec string, emit func(string)) {
	switch rec {
	case "empty":
		return
	case "small":
		emit("small 1")
		emit("small 2")
		return
	}
	die := false
	if f, err := os.OpenFile(rec, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
		f.Close()
		die = true
	}
	pad := strings.Repeat("x", 1000)
	for i := range s3BigPartLines {
		emit(fmt.Sprintf("%s %05d", pad, i))
	}
	if die {
		os.Exit(3) // after 9 MiB: the first 8 MiB part is uploaded
	}
})

// s3Uploads lists the multipart uploads open in the bucket.
func s3Uploads(t *testing.T, srv *testenv.S3, bucket string) []string {
	t.Helper()
	out, err := srv.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("listing the uploads of %s: %v", bucket, err)
	}
	var keys []string
	for _, up := range out.Uploads {
		keys = append(keys, aws.ToString(up.Key))
	}
	return keys
}

// TestObjectStorageRetriedAttempt: the first attempt of partition 1 uploads
// a part of part-00001 and its executor dies, leaving its upload open; the
// second attempt succeeds. The commit completes only the second attempt's
// upload: every part appears once, whole, and no upload is left open.
func TestObjectStorageRetriedAttempt(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "results"); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "died")
	var atCommit []string
	runJob(t, "local-cluster[2,1,256]", func(ctx *Context) error {
		ctx.commitHook = func(completed int) error {
			if completed == 0 {
				atCommit = s3Uploads(t, srv, "results")
			}
			return nil
		}
		return FlatMap(Parallelize(ctx, []string{"small", marker, "empty"}, 3), testS3Part).SaveAsTextFile("s3a://results/out")
	}, append(srv.Conf(), "spark.task.maxFailures=3")...)

	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the first attempt did not run: %v", err)
	}
	// The dead attempt's upload and the winner's, both of part-00001.
	if n := strings.Count(strings.Join(atCommit, " "), "out/part-00001"); n < 2 {
		t.Errorf("uploads open when the commit started: %v; want two of out/part-00001 (the dead attempt's and the winner's)", atCommit)
	}
	want := []string{"out/_SUCCESS", "out/part-00000", "out/part-00001", "out/part-00002"}
	if diff := gocmp.Diff(want, s3Keys(t, srv, "results", "")); diff != "" {
		t.Errorf("objects after the job (-want +got):\n%s", diff)
	}
	if got := s3Get(t, srv, "results", "out/part-00000"); got != "small 1\nsmall 2\n" {
		t.Errorf("part-00000 = %q", got)
	}
	if got := s3Get(t, srv, "results", "out/part-00002"); got != "" {
		t.Errorf("part-00002 = %q, want empty", got)
	}
	lines := strings.Split(strings.TrimSuffix(s3Get(t, srv, "results", "out/part-00001"), "\n"), "\n")
	if len(lines) != s3BigPartLines || lines[0] != strings.Repeat("x", 1000)+" 00000" || lines[len(lines)-1] != fmt.Sprintf("%s %05d", strings.Repeat("x", 1000), s3BigPartLines-1) {
		t.Errorf("part-00001 has %d lines, want %d, each once in order", len(lines), s3BigPartLines)
	}
	if left := s3Uploads(t, srv, "results"); len(left) != 0 {
		t.Errorf("uploads left open after the commit: %v", left)
	}
}

// TestObjectStorageKilledJob stops the driver at points of a job's commit:
// killed (no clean-up at all, as after SIGKILL) before or during it, or its
// context cancelled during it. No case leaves _SUCCESS or output that
// TextFile reads; a killed driver's leftovers go with RemovePrefix, which
// aborts its pending uploads by prefix; a cancelled one removes them itself.
func TestObjectStorageKilledJob(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "results"); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name   string
		at     int   // completed parts when the driver stops
		stop   error // what stops it
		killed bool
	}{
		{"killed before the commit", 0, commit.ErrKilled, true},
		{"killed during the commit", 1, commit.ErrKilled, true},
		{"cancelled during the commit", 1, context.Canceled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := fmt.Sprintf("out%d", i)
			runJob(t, "local[2]", func(ctx *Context) error {
				ctx.commitHook = func(completed int) error {
					if completed == tc.at {
						return tc.stop
					}
					return nil
				}
				words := Parallelize(ctx, []string{"a", "b", "c", "d", "e", "f"}, 6)
				err := words.SaveAsTextFile("s3://results/" + out)
				if !errors.Is(err, tc.stop) {
					t.Errorf("SaveAsTextFile: err = %v, want %v", err, tc.stop)
				}
				ctx.commitHook = nil
				_, err = TextFile(ctx, "s3://results/"+out).Count()
				if tc.killed && (err == nil || !strings.Contains(err.Error(), "has not committed")) {
					t.Errorf("reading the output of a killed job: err = %v, want 'has not committed'", err)
				}
				if tc.killed {
					err := words.SaveAsTextFile("s3://results/" + out)
					if err == nil || !strings.Contains(err.Error(), "uncommitted output") {
						t.Errorf("writing again into the output of a killed job: err = %v, want 'uncommitted output'", err)
					}
				}
				if !tc.killed && err == nil {
					t.Errorf("reading the output of a cancelled job: no error")
				}
				return nil
			}, srv.Conf()...)
			keys := s3Keys(t, srv, "results", out+"/")
			if slices.Contains(keys, out+"/_SUCCESS") {
				t.Errorf("_SUCCESS written: %v", keys)
			}
			if !tc.killed {
				if len(keys) != 0 || len(s3Uploads(t, srv, "results")) != 0 {
					t.Errorf("a cancelled job left objects %v and uploads %v", keys, s3Uploads(t, srv, "results"))
				}
				return
			}
			parts := 0
			for _, k := range keys {
				if strings.Contains(k, "/part-") {
					parts++
				}
			}
			if parts < tc.at || !slices.Contains(keys, out+"/"+objstore.PendingMarker) {
				t.Errorf("objects a killed driver left: %v; want %s and at least %d parts", keys, objstore.PendingMarker, tc.at)
			}
			// Killed before the commit: every part is an open upload, none
			// visible. (During it, the commit's concurrent completions may
			// all have finished.)
			if ups := s3Uploads(t, srv, "results"); tc.at == 0 && (len(ups) != 6 || parts != 0) {
				t.Errorf("a driver killed before its commit left uploads %v and objects %v; want 6 uploads, no part", ups, keys)
			}
			store := objstore.New(objstore.Config{Endpoint: srv.Endpoint, PathStyle: true, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
			if err := store.RemovePrefix(context.Background(), objstore.URI{Bucket: "results", Key: out}); err != nil {
				t.Fatal(err)
			}
			if keys, ups := s3Keys(t, srv, "results", out+"/"), s3Uploads(t, srv, "results"); len(keys) != 0 || len(ups) != 0 {
				t.Errorf("after RemovePrefix: objects %v, uploads %v", keys, ups)
			}
		})
	}
}

// TestObjectStorageBadSettings: a wrong endpoint, keys, session token or
// region give one error before any job starts, naming the path, what the
// store said and the key to check, for reading and for writing. versitygw
// refuses any session token with its static account (InvalidToken); it
// has no STS, so an expired one (ExpiredToken, described the same way)
// cannot be produced here.
func TestObjectStorageBadSettings(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "data"); err != nil {
		t.Fatal(err)
	}
	s3Put(t, srv, "data", "in/a.txt", "a b\n")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close() // a loopback port nothing listens on
	// The keys in the environment (the SDK's default chain), as executors
	// and drivers on Kubernetes take them.
	var envConf []string
	for _, c := range srv.Conf() {
		if !strings.Contains(c, ".access.key=") && !strings.Contains(c, ".secret.key=") {
			envConf = append(envConf, c)
		}
	}
	for _, tc := range []struct {
		name string
		conf string
		want []string
		env  string // NAME=value, with the keys taken from the environment
	}{
		{"wrong secret", "spark.hadoop.fs.s3a.secret.key=wrong", []string{"SignatureDoesNotMatch", "spark.hadoop.fs.s3a.access.key and .secret.key"}, ""},
		{"invalid session token", "spark.hadoop.fs.s3a.session.token=expired", []string{"InvalidToken", "spark.hadoop.fs.s3a.session.token", "AWS_SESSION_TOKEN"}, ""},
		{"invalid session token in the environment", "", []string{"InvalidToken", "AWS_SESSION_TOKEN"}, "AWS_SESSION_TOKEN=expired"},
		{"wrong secret in the environment", "", []string{"SignatureDoesNotMatch", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"}, "AWS_SECRET_ACCESS_KEY=wrong"},
		{"unknown access key", "spark.hadoop.fs.s3a.access.key=nobody", []string{"XAdminUserNotFound", "spark.hadoop.fs.s3a.access.key and .secret.key"}, ""},
		{"wrong endpoint", "spark.hadoop.fs.s3a.endpoint=http://" + closedAddr, []string{"dial tcp " + closedAddr + ": connect: connection refused (the store did not answer, 5 attempts: check spark.hadoop.fs.s3a.endpoint"}, ""},
		{"wrong region", "spark.hadoop.fs.s3a.endpoint.region=eu-west-3", []string{"spark.hadoop.fs.s3a.endpoint.region"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := append(srv.Conf(), tc.conf)
			if tc.env != "" {
				name, value, _ := strings.Cut(tc.env, "=")
				t.Setenv(name, value)
				conf = envConf
			}
			runJob(t, "local[2]", func(ctx *Context) error {
				jobs := ctx.jobs.Load()
				_, readErr := TextFile(ctx, "s3://data/in/").Count()
				writeErr := Parallelize(ctx, []string{"a"}, 1).SaveAsTextFile("s3://data/out")
				for _, c := range []struct {
					err  error
					path string
				}{{readErr, "s3://data/in"}, {writeErr, "s3://data/out"}} {
					if c.err == nil {
						t.Errorf("%s: no error", c.path)
						continue
					}
					t.Logf("%s: %v", c.path, c.err)
					msg := c.err.Error()
					for _, want := range append([]string{c.path}, tc.want...) {
						if !strings.Contains(msg, want) {
							t.Errorf("%s: error %q does not contain %q", c.path, msg, want)
						}
					}
					if strings.Contains(msg, "\n") {
						t.Errorf("%s: error of several lines: %q", c.path, msg)
					}
				}
				if n := ctx.jobs.Load(); n != jobs {
					t.Errorf("%d jobs ran before the errors", n-jobs)
				}
				return nil
			}, conf...)
		})
	}
	if keys := s3Keys(t, srv, "data", ""); !slices.Equal(keys, []string{"in/a.txt"}) {
		t.Errorf("objects after the failed writes: %v", keys)
	}
}

// TestObjectStorageParquetProjection: reading two of ten equally wide
// columns of Parquet in S3 makes the store serve at most 30% of the files'
// bytes, counted by a proxy between drover and the store, with one GET per
// column chunk; reading all ten serves them all, which shows the proxy
// counts what is read.
func TestObjectStorageParquetProjection(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "bench"); err != nil {
		t.Fatal(err)
	}
	proxy := newCountingProxy(t, srv.Endpoint)
	const rows, dir = 60_000, "s3://bench/wide"
	runJob(t, "local-cluster[2,1,512]", func(ctx *Context) error {
		ds := Map(Range(ctx, 0, rows, 1, 4), benchWideRow)
		if err := ds.SaveAsParquet(dir); err != nil {
			return err
		}
		want, err := ds.Collect()
		if err != nil {
			return err
		}
		fileBytes, err := objectBytes(ctx, s3Store(srv, srv.Endpoint), dir)
		if err != nil {
			return err
		}
		var requests int64
		served := func(read func() error) (float64, error) {
			before, reqBefore := proxy.served.Load(), proxy.requests.Load()
			err := read()
			requests = proxy.requests.Load() - reqBefore
			return float64(proxy.served.Load()-before) / float64(fileBytes), err
		}
		full, err := served(func() error {
			got, err := ReadParquet[wideRow](ctx, dir).Collect()
			if err == nil && len(got) != len(want) {
				t.Errorf("read %d rows of all columns, want %d", len(got), len(want))
			}
			return err
		})
		if err != nil {
			return err
		}
		projected, err := served(func() error {
			got, err := ReadParquet[wideProjection](ctx, dir).Collect()
			if err != nil {
				return err
			}
			wantPairs := map[wideProjection]bool{}
			for _, r := range want {
				wantPairs[wideProjection{r.C2, r.C7}] = true
			}
			if len(got) != len(want) {
				t.Errorf("read %d rows of two columns, want %d", len(got), len(want))
			}
			for _, p := range got {
				if !wantPairs[p] {
					t.Fatalf("read %+v, which no row written has", p)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		t.Logf("%d bytes of Parquet; served reading all ten columns: %.3f of them, two columns: %.3f in %d requests", fileBytes, full, projected, requests)
		if full < 0.95 {
			t.Errorf("reading every column served %.3f of the files' bytes: the proxy does not see the reads", full)
		}
		if projected > 0.30 {
			t.Errorf("reading 2 of 10 columns served %.3f of the files' bytes, want ≤ 0.30: projection reads more than its columns", projected)
		}
		// Per file: the driver's and the task's footer reads (3 GETs
		// each) and one GET per column chunk; reads of a page each took
		// 65 requests here.
		if limit := int64(1 + 4*(3+3+2)); requests > limit {
			t.Errorf("reading 2 of 10 columns of 4 files took %d requests, want ≤ %d: one GET per column chunk", requests, limit)
		}
		return nil
	}, append(srv.Conf(), "spark.hadoop.fs.s3a.endpoint="+proxy.URL)...)
}

// TestObjectStorageExecutorRetries: executors' retries count in the
// driver's drover_objstore_retries_total. A proxy in front of versitygw
// answers the first ranged GET of each input object (a split an executor
// reads; the driver only lists) with 503 SlowDown, which the executor's
// SDK retries; the task statuses carry those retries to the driver.
func TestObjectStorageExecutorRetries(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "books"); err != nil {
		t.Fatal(err)
	}
	lines := generatedLines(3000)
	for i := range 3 {
		s3Put(t, srv, "books", fmt.Sprintf("in/book%d.txt", i), strings.Join(lines[i*1000:(i+1)*1000], "\n")+"\n")
	}
	proxy := testenv.SignedProxy(t, srv.Endpoint, nil)
	var mu sync.Mutex
	throttled := map[string]bool{}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Range") != "" {
			mu.Lock()
			first := !throttled[r.URL.Path]
			throttled[r.URL.Path] = true
			mu.Unlock()
			if first {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>`+
					`<Message>Please reduce your request rate.</Message></Error>`)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	throttledRetries := func(c *Context) float64 {
		families, err := c.Metrics().Gather()
		if err != nil {
			t.Fatal(err)
		}
		return familyValue(families, "drover_objstore_retries_total", "reason", "throttled")
	}
	runJob(t, "local-cluster[2,1,256]", func(ctx *Context) error {
		// The counter is the process's: other tests' drivers may have
		// counted before.
		before := throttledRetries(ctx)
		n, err := TextFile(ctx, "s3://books/in/*.txt").Count()
		if err != nil {
			return err
		}
		if n != int64(len(lines)) {
			t.Errorf("counted %d lines, want %d", n, len(lines))
		}
		mu.Lock()
		injected := len(throttled)
		mu.Unlock()
		if injected != 3 {
			t.Errorf("%d objects read with ranged GETs through the proxy, want 3", injected)
		}
		if got := throttledRetries(ctx) - before; got != float64(injected) {
			t.Errorf("the driver counted %v throttled retries, want the executors' %d", got, injected)
		}
		return nil
	}, append(srv.Conf(), "spark.hadoop.fs.s3a.endpoint="+front.URL)...)
}
