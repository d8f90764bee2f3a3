//go:build integration

package keptlog

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// On an S3 server, through a front that can play an outage: each chunk is
// an object of the documented name; an outage costs retries, not lines;
// the cap deletes the oldest objects; the reader finds the processes and
// reads, tails and follows their logs.
func TestKeptLogsS3(t *testing.T) {
	srv := testenv.NewS3(t)
	ctx := context.Background()
	if err := srv.CreateBucket(ctx, "logs"); err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	proxy := testenv.SignedProxy(t, srv.Endpoint, nil)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	cfg := objstore.Config{Endpoint: front.URL, PathStyle: true, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, MaxBackoff: 10 * time.Millisecond}
	sink, err := OpenSink("s3a://logs/kept", cfg)
	if err != nil {
		t.Fatal(err)
	}
	store := objstore.New(cfg)
	keys := func(dir string) []string {
		t.Helper()
		objs, err := store.ListTree(ctx, objstore.URI{Bucket: "logs", Key: "kept/" + dir})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range objs {
			out = append(out, strings.TrimPrefix(o.URI.Key, "kept/"+dir+"/"))
		}
		return out
	}
	flush := func(w *Writer, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return w.Flush(ctx)
	}
	read := func(p Process, o ReadOptions) string {
		t.Helper()
		r, err := Open(ctx, sink, p, o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// Ticks never come: Flush and Close ship.
	var warnings strings.Builder
	w, err := New(Options{Sink: sink, Process: driver1, Interval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&warnings, nil))})
	if err != nil {
		t.Fatal(err)
	}
	before, during, after := lines("before", 0, 100, 40), lines("during", 0, 100, 40), lines("after", 0, 100, 40)
	write := func(ls []string) {
		for _, l := range ls {
			w.Write([]byte(l))
		}
	}
	write(before)
	if err := flush(w, time.Minute); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	write(during)
	if err := flush(w, time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush with the store down: %v", err)
	}
	down.Store(false)
	write(after)
	if err := flush(w, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"0000000000000000.log.gz", "0000000000004000.log.gz", "0000000000008000.log.gz", "0000000000012000.log.gz"}
	if diff := cmp.Diff(want, keys(driver1.AppID+"/driver-a1")); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if st := w.Stats(); st.ChunksShipped != 3 || st.ChunksDropped != 0 || st.ShipFailures == 0 {
		t.Errorf("stats: %+v", st)
	}
	if !strings.Contains(warnings.String(), "shipping failed") {
		t.Errorf("warnings: %s", warnings.String())
	}
	whole := strings.Join(before, "") + strings.Join(during, "") + strings.Join(after, "")
	if diff := cmp.Diff(whole, read(driver1, ReadOptions{Tail: AllLines, Follow: true})); diff != "" {
		t.Errorf("the driver's log (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(strings.Join(after[95:], ""), read(driver1, ReadOptions{Tail: 5})); diff != "" {
		t.Errorf("its tail (-want +got):\n%s", diff)
	}

	// An executor over the cap: its oldest objects are deleted.
	exec := Process{AppID: driver1.AppID, Executor: 3, Attempt: 1}
	ew, err := New(Options{Sink: sink, Process: exec, Interval: time.Hour, MaxChunk: 400, MaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines("exec", 0, 100, 40) { // 4000 bytes, 10 chunks
		ew.Write([]byte(l))
	}
	if err := ew.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want = []string{"0000000000003200.log.gz", "0000000000003600.log.gz", "0000000000004000.log.gz"}
	if diff := cmp.Diff(want, keys(driver1.AppID+"/executor-3-a1")); diff != "" {
		t.Errorf("the executor's objects (-want +got):\n%s", diff)
	}
	wantLog := "[drover: 3200 bytes of this log were cut to keep it under the cap]\n" + strings.Join(lines("exec", 80, 20, 40), "")
	if diff := cmp.Diff(wantLog, read(exec, ReadOptions{Tail: AllLines})); diff != "" {
		t.Errorf("the executor's log (-want +got):\n%s", diff)
	}

	procs, err := Processes(ctx, sink, driver1.AppID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Process{driver1, exec}, procs); diff != "" {
		t.Errorf("Processes (-want +got):\n%s", diff)
	}
	if _, err := Open(ctx, sink, Process{AppID: driver1.AppID, Executor: 4, Attempt: 1}, ReadOptions{}); !errors.Is(err, ErrNoLog) {
		t.Errorf("Open of an executor with nothing kept: %v", err)
	}
}
