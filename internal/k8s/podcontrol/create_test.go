package podcontrol

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// TestCreatePodDropsTheAnswer: an executor pod's create sends the pod and
// reads the API server's answer, the created pod, without decoding it (the
// watch brings the pod): an answer no decoder takes is success, and its
// 4 MiB cost under 1 MiB of allocations. A refusal stays an API status.
func TestCreatePodDropsTheAnswer(t *testing.T) {
	const answer = 4 << 20
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = 0xff // not protobuf, not JSON
	}
	testCases := map[string]struct {
		status int
		reason metav1.StatusReason
		is     func(error) bool
	}{
		"created":        {status: http.StatusCreated},
		"already exists": {status: http.StatusConflict, reason: metav1.StatusReasonAlreadyExists, is: apierrors.IsAlreadyExists},
		"quota (403)":    {status: http.StatusForbidden, reason: metav1.StatusReasonForbidden, is: apierrors.IsForbidden},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			var method, path, sent string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				method, path = r.Method, r.URL.Path
				body, _ := io.ReadAll(r.Body)
				if obj, err := k8sruntime.Decode(scheme.Codecs.UniversalDeserializer(), body); err == nil {
					if p, ok := obj.(*corev1.Pod); ok {
						sent = p.Name
					}
				}
				answerAPI(w, tc.status, http.StatusCreated, tc.reason, chunk, answer)
			}))
			defer srv.Close()
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
			if err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-exec-1"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "executor", Image: "app:1"}}}}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err = createPod(t.Context(), cs, "spark", pod)
			runtime.ReadMemStats(&after)
			if d := cmp.Diff([]string{http.MethodPost, "/api/v1/namespaces/spark/pods", "app-exec-1"}, []string{method, path, sent}); d != "" {
				t.Errorf("request (-want +got):\n%s", d)
			}
			if tc.is != nil {
				if !tc.is(err) {
					t.Errorf("error %v, want the API server's %s", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("create failed: %v", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Errorf("creating allocated %d KiB for a %d MiB answer, want at most 1024 KiB", alloc>>10, answer>>20)
			}
		})
	}
}

// countingLimiter is a client rate limiter that counts its waits.
type countingLimiter struct {
	flowcontrol.RateLimiter
	waits atomic.Int64
}

func (l *countingLimiter) Wait(context.Context) error {
	l.waits.Add(1)
	return nil
}

// TestCreatePodRetriesWaitForTheRateLimit: a create the API server sheds
// (429 with Retry-After) is sent again, and each attempt waits for the
// client's rate limiter (drover.kubernetes.client.qps and burst), the retry
// included: a server shedding load is when the limit matters most.
func TestCreatePodRetriesWaitForTheRateLimit(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	limiter := &countingLimiter{RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, RateLimiter: limiter})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-exec-1"}}
	if err := createPod(t.Context(), cs, "spark", pod); err != nil {
		t.Fatalf("create after one 429: %v", err)
	}
	if d := cmp.Diff([2]int64{2, 2}, [2]int64{requests.Load(), limiter.waits.Load()}); d != "" {
		t.Errorf("[requests, limiter waits] (-want +got):\n%s", d)
	}
}
