package objstore_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/objstore"
)

// TestRetries: a store's transient answers (503 SlowDown, 500) are retried
// and counted by reason; a permanent one (403) fails at once with the
// store's message. An in-process fake, since a real server cannot be made
// to throttle on demand.
func TestRetries(t *testing.T) {
	answers := map[int][2]string{503: {"SlowDown", "Please reduce your request rate."},
		500: {"InternalError", "oops"}, 403: {"AccessDenied", "no, you may not"}}
	for _, tc := range []struct {
		name      string
		failures  []int // statuses of the first answers; then 200
		wantErr   string
		reason    string
		wantCount float64
		wantCalls int32
	}{
		{name: "throttled", failures: []int{503, 503}, reason: "throttled", wantCount: 2, wantCalls: 3},
		{name: "server error", failures: []int{500}, reason: "server", wantCount: 1, wantCalls: 2},
		{name: "permanent", failures: []int{403}, wantErr: "AccessDenied: no, you may not (check the credentials", reason: "throttled", wantCalls: 1},
		{name: "gives up", failures: []int{503, 503, 503, 503, 503, 503}, wantErr: "SlowDown", reason: "throttled", wantCount: 4, wantCalls: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(calls.Add(1)) - 1
				if n < len(tc.failures) {
					storeError(w, tc.failures[n], answers[tc.failures[n]][0], answers[tc.failures[n]][1])
					return
				}
				twoBytes(w)
			}))
			defer srv.Close()
			store := objstore.New(objstore.Config{Endpoint: srv.URL, PathStyle: true, AccessKey: "k", SecretKey: "s",
				MaxBackoff: time.Millisecond})
			objstore.TakeRetries() // others' before
			before := retryCount(t, tc.reason)
			body, err := store.OpenRange(context.Background(), objstore.URI{Bucket: "bucket", Key: "k"}, "", 0, 2)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "reading s3://bucket/k") {
					t.Errorf("err = %v, want one naming the path and containing %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				b, _ := io.ReadAll(body)
				body.Close()
				if string(b) != "hi" {
					t.Errorf("read %q", b)
				}
			}
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("%d requests, want %d", got, tc.wantCalls)
			}
			if got := retryCount(t, tc.reason) - before; got != tc.wantCount {
				t.Errorf("retries counted as %s: %v, want %v", tc.reason, got, tc.wantCount)
			}
			// What an executor sends its driver, once.
			var want map[string]int64
			if tc.wantCount > 0 {
				want = map[string]int64{tc.reason: int64(tc.wantCount)}
			}
			if diff := cmp.Diff(want, objstore.TakeRetries()); diff != "" {
				t.Errorf("TakeRetries (-want +got):\n%s", diff)
			}
			if got := objstore.TakeRetries(); got != nil {
				t.Errorf("TakeRetries again = %v, want nothing", got)
			}
			// A driver adds an executor's.
			before = retryCount(t, "server")
			objstore.AddRetries(map[string]int64{"server": 3})
			if got := retryCount(t, "server") - before; got != 3 {
				t.Errorf("AddRetries of 3 server retries counted %v", got)
			}
		})
	}
}

func retryCount(t *testing.T, reason string) float64 {
	t.Helper()
	return float64(objstore.RetryTotals()[reason])
}

// TestRetriesOutlastAnOutage: after an outage in which every request
// failed all its attempts, a read that meets one more transient error is
// still retried. With the SDK's default retry quota (500 tokens, 14 a
// retry, given back only when a retry succeeds) the outage used it up and
// that read failed at its first attempt.
func TestRetriesOutlastAnOutage(t *testing.T) {
	var outage atomic.Bool
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := calls.Add(1); outage.Load() || n == 1 {
			storeError(w, http.StatusInternalServerError, "InternalError", "oops")
			return
		}
		twoBytes(w)
	}))
	defer srv.Close()
	store := objstore.New(objstore.Config{Endpoint: srv.URL, PathStyle: true, AccessKey: "k", SecretKey: "s",
		MaxBackoff: time.Microsecond})
	ctx := context.Background()
	u := objstore.URI{Bucket: "bucket", Key: "k"}
	outage.Store(true)
	const reads = 20 // 80 retries, more than twice the default quota's 35
	for range reads {
		if _, err := store.OpenRange(ctx, u, "", 0, 2); err == nil {
			t.Fatal("a read succeeded during the outage")
		}
	}
	if got, want := calls.Load(), int32(reads*5); got != want {
		t.Errorf("%d requests during the outage, want %d (5 attempts each)", got, want)
	}
	outage.Store(false)
	calls.Store(0) // the next request fails once more, then the store answers
	body, err := store.OpenRange(ctx, u, "", 0, 2)
	if err != nil {
		t.Fatalf("a read after the outage, one transient error: %v (%d requests)", err, calls.Load())
	}
	b, _ := io.ReadAll(body)
	body.Close()
	if string(b) != "hi" || calls.Load() != 2 {
		t.Errorf("read %q in %d requests, want \"hi\" in 2", b, calls.Load())
	}
	objstore.TakeRetries() // not this test's to report
}

// storeError answers as an S3 store does with an error.
func storeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+code+`</Code><Message>`+msg+`</Message></Error>`)
}

// twoBytes answers a ranged GET of an object of two bytes, "hi".
func twoBytes(w http.ResponseWriter) {
	w.Header().Set("Content-Range", "bytes 0-1/2")
	w.WriteHeader(http.StatusPartialContent)
	io.WriteString(w, "hi")
}
