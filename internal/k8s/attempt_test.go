package k8s

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestDriverRestartEpoch: a restarted driver's epoch is its container's
// restart count, and still a new one when the kubelet has not reported
// the restart yet.
func TestDriverRestartEpoch(t *testing.T) {
	tests := []struct {
		restarts int32
		claimed  int64
		want     int64
	}{
		{restarts: 0, claimed: -1, want: 0}, // the first attempt
		{restarts: 1, claimed: 0, want: 1},  // a restart, reported
		{restarts: 0, claimed: 0, want: 1},  // a restart, not reported yet
		{restarts: 3, claimed: 1, want: 3},  // attempts that died before their claim
		{restarts: 2, claimed: 2, want: 3},
	}
	var got, want []int64
	for _, tc := range tests {
		got = append(got, nextEpoch(tc.restarts, tc.claimed))
		want = append(want, tc.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("epochs (-want +got):\n%s", diff)
	}
}

func TestDriverRestartCause(t *testing.T) {
	tests := map[string]struct {
		st   corev1.ContainerStatus
		want string
	}{
		"first run": {want: ""},
		"oom": {st: corev1.ContainerStatus{RestartCount: 1, LastTerminationState: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}, want: "exit 137, OOMKilled"},
		"no reason": {st: corev1.ContainerStatus{RestartCount: 2, LastTerminationState: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}}, want: "exit 2"},
		"not reported": {st: corev1.ContainerStatus{RestartCount: 1}, want: "cause not reported"},
	}
	for name, tc := range tests {
		if got := lastCause(tc.st); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
