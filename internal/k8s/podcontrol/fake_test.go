package podcontrol

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFakeRecordsCalls: the fake records every call, failed ones too, and
// answers with the injected errors.
func TestFakeRecordsCalls(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		fake    *Fake
		wantErr error
	}{
		{name: "success", fake: &Fake{}},
		{name: "injected", fake: &Fake{CreateErr: boom, DeleteErr: boom, DeletePodsErr: boom}, wantErr: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fake
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "exec-1"}}
			opts := metav1.ListOptions{LabelSelector: "spark-role=executor"}
			errs := []error{
				f.CreatePod(t.Context(), "spark", pod),
				f.DeletePod(t.Context(), "spark", "exec-1"),
				f.DeletePods(t.Context(), "spark", opts),
			}
			for i, err := range errs {
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
					t.Errorf("call %d: err = %v, want %v", i, err, tc.wantErr)
				}
			}
			wantPod := pod.DeepCopy()
			wantPod.Namespace = "spark"
			if d := cmp.Diff([]*corev1.Pod{wantPod}, f.Created); d != "" {
				t.Errorf("Created (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]string{"spark/exec-1"}, f.Deleted); d != "" {
				t.Errorf("Deleted (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]metav1.ListOptions{opts}, f.Collections); d != "" {
				t.Errorf("Collections (-want +got):\n%s", d)
			}
		})
	}
}
