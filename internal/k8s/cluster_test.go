package k8s

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/k8s/allocator"
)

func TestSnapshotDelay(t *testing.T) {
	tests := []struct {
		policy allocator.Policy
		pods   int
		want   time.Duration
	}{
		{allocator.PolicyAdaptive, 0, 100 * time.Millisecond},
		{allocator.PolicyAdaptive, 1000, 100 * time.Millisecond},
		{allocator.PolicyAdaptive, 1001, 200 * time.Millisecond},
		{allocator.PolicyAdaptive, 5000, 500 * time.Millisecond},
		{allocator.PolicyAdaptive, 50000, time.Second}, // never past the batch delay
		{allocator.PolicySpark, 10, time.Second},
	}
	var got, want []time.Duration
	for _, tt := range tests {
		got = append(got, snapshotDelay(tt.policy, time.Second, tt.pods))
		want = append(want, tt.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
}
