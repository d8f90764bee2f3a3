package podcontrol

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestDeleteRetryable: stop asks again after the errors of a delete that
// outlasted the API server (a timeout, a reset stream, an overloaded
// server), never after one that asking again cannot change.
func TestDeleteRetryable(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	testCases := map[string]struct {
		err  error
		want bool
	}{
		"server timeout (504)": {apierrors.NewTimeoutError("the server was unable to return a response in the time allotted", 0), true},
		"server timeout":       {apierrors.NewServerTimeout(pods, "deletecollection", 1), true},
		"reset stream":         {fmt.Errorf("delete: %w", errors.New("stream error: stream ID 20011; INTERNAL_ERROR; received from peer")), true},
		"too many requests":    {apierrors.NewTooManyRequests("slow down", 1), true},
		"forbidden":            {apierrors.NewForbidden(pods, "", errors.New("no RBAC")), false},
		"not found":            {apierrors.NewNotFound(pods, "x"), false},
		"bad request":          {apierrors.NewBadRequest("invalid selector"), false},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if got := deleteRetryable(tc.err); got != tc.want {
				t.Errorf("deleteRetryable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestDeletePodCollectionDropsTheAnswer: stop's collection delete reads the
// API server's answer, every deleted pod, without holding it: 16 MiB of
// answer cost the driver under 1 MiB of allocations (client-go's typed
// DeleteCollection read it whole, about 32 MiB in a doubling buffer), and
// the errors stay API statuses that deleteRetryable can judge.
func TestDeletePodCollectionDropsTheAnswer(t *testing.T) {
	const answer = 16 << 20
	chunk := make([]byte, 64<<10)
	testCases := map[string]struct {
		status        int
		wantErr       bool
		wantRetryable bool
	}{
		"deleted":                 {status: http.StatusOK},
		"server timeout (504)":    {status: http.StatusGatewayTimeout, wantErr: true, wantRetryable: true},
		"forbidden, final (403)":  {status: http.StatusForbidden, wantErr: true},
		"overloaded server (503)": {status: http.StatusServiceUnavailable, wantErr: true, wantRetryable: true},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			var got struct{ method, path, selector string }
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.method, got.path, got.selector = r.Method, r.URL.Path, r.URL.Query().Get("labelSelector")
				answerAPI(w, tc.status, http.StatusOK, reasonFor(tc.status), chunk, answer)
			}))
			defer srv.Close()
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err = deletePodCollection(t.Context(), cs, "spark", metav1.ListOptions{LabelSelector: "spark-app-selector=a,spark-role=executor"})
			runtime.ReadMemStats(&after)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if err != nil {
				if r := deleteRetryable(err); r != tc.wantRetryable {
					t.Errorf("deleteRetryable(%v) = %v, want %v", err, r, tc.wantRetryable)
				}
				return
			}
			if d := cmp.Diff([]string{http.MethodDelete, "/api/v1/namespaces/spark/pods", "spark-app-selector=a,spark-role=executor"},
				[]string{got.method, got.path, got.selector}); d != "" {
				t.Errorf("request (-want +got):\n%s", d)
			}
			// The whole process's allocations, the server's included: its
			// answer comes from one reused chunk.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Errorf("deleting allocated %d KiB for a %d MiB answer, want at most 1024 KiB", alloc>>10, answer>>20)
			}
		})
	}
}

// reasonFor is the API status reason the API server gives with code.
// answerAPI writes a fake API server's answer: the Status of a failure
// when status is not ok, else size bytes of chunk as a protobuf body.
func answerAPI(w http.ResponseWriter, status, ok int, reason metav1.StatusReason, chunk []byte, size int) {
	if status != ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: int32(status), Reason: reason, Message: "test"})
		return
	}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
	w.WriteHeader(ok)
	for range size / len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

func reasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	}
	return metav1.StatusReasonUnknown
}
