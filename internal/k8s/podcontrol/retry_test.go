package podcontrol

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestDeletesRetry: one executor's pod is deleted by name, the
// application's by collection; both are asked again while the API server
// times out or is overloaded, not after a final refusal, and a pod already
// gone is no error.
func TestDeletesRetry(t *testing.T) {
	const sel = "spark-app-selector=a,spark-role=executor"
	tests := map[string]struct {
		byName   bool
		statuses []int // the answers in turn; the last repeats
		wantReqs []string
		wantErr  bool
	}{
		"by name": {byName: true, statuses: []int{http.StatusOK},
			wantReqs: []string{"DELETE /api/v1/namespaces/spark/pods/app-exec-3"}},
		"by name, after a timeout": {byName: true, statuses: []int{http.StatusGatewayTimeout, http.StatusOK},
			wantReqs: []string{"DELETE /api/v1/namespaces/spark/pods/app-exec-3", "DELETE /api/v1/namespaces/spark/pods/app-exec-3"}},
		"by name, gone": {byName: true, statuses: []int{http.StatusNotFound},
			wantReqs: []string{"DELETE /api/v1/namespaces/spark/pods/app-exec-3"}},
		"by name, forbidden": {byName: true, statuses: []int{http.StatusForbidden}, wantErr: true,
			wantReqs: []string{"DELETE /api/v1/namespaces/spark/pods/app-exec-3"}},
		"collection, after overload": {statuses: []int{http.StatusServiceUnavailable, http.StatusOK},
			wantReqs: []string{"DELETE /api/v1/namespaces/spark/pods?" + sel, "DELETE /api/v1/namespaces/spark/pods?" + sel}},
		"collection, timing out for good": {statuses: []int{http.StatusGatewayTimeout}, wantErr: true,
			wantReqs: repeat("DELETE /api/v1/namespaces/spark/pods?"+sel, maxDeleteAttempts)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var reqs []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				req := r.Method + " " + r.URL.Path
				if s := r.URL.Query().Get("labelSelector"); s != "" {
					req += "?" + s
				}
				reqs = append(reqs, req)
				status := tc.statuses[min(len(reqs), len(tc.statuses))-1]
				mu.Unlock()
				answerAPI(w, status, http.StatusOK, reasonFor(status), make([]byte, 16), 16)
			}))
			defer srv.Close()
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
			if err != nil {
				t.Fatal(err)
			}
			pc := New(cs, nil)
			if tc.byName {
				err = pc.DeletePod(t.Context(), "spark", "app-exec-3")
			} else {
				err = pc.DeletePods(t.Context(), "spark", metav1.ListOptions{LabelSelector: sel})
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, want one: %v", err, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if d := cmp.Diff(tc.wantReqs, reqs); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
