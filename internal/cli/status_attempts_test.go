package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/submit"
)

// TestStatusShowsAttempts: drover status shows a restarted driver's
// attempt and the last restart's cause, and a driver that ran out of
// restarts as failed (exit code 1) with the cause it named.
func TestStatusShowsAttempts(t *testing.T) {
	const cause = "the driver failed 4 times; the last attempt (4 of 4): exit 137, OOMKilled"
	restarted := func(phase corev1.PodPhase, restarts int32) *corev1.Pod {
		p := driverPod("a-driver", phase, 143)
		p.Annotations = map[string]string{podspec.AnnotationMaxRestarts: "3"}
		if len(p.Status.ContainerStatuses) == 0 {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: podspec.DriverContainerName,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}
		cs := &p.Status.ContainerStatuses[0]
		cs.RestartCount = restarts
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}
		return p
	}
	gaveUp := restarted(corev1.PodFailed, 4)
	gaveUp.Annotations[podspec.AnnotationFailed] = cause
	for name, tc := range map[string]struct {
		pod      *corev1.Pod
		wantCode int
		want     []string
	}{
		"restarted": {pod: restarted(corev1.PodRunning, 1), want: []string{"\tattempt 2 of 4, last restart: exit 137, OOMKilled"}},
		"gave up": {pod: gaveUp, wantCode: 1,
			want: []string{"\tattempt 4 of 4 failed: exit 137, OOMKilled; no restart left", "\n\t" + cause + "\n"}},
	} {
		t.Run(name, func(t *testing.T) {
			id, err := submit.ParseID("spark:a-driver", "default")
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = printStatus(context.Background(), fake.NewClientset(tc.pod), id, time.Now(), &out)
			if diff := cmp.Diff(tc.wantCode, ExitCode(err)); diff != "" {
				t.Errorf("exit code (-want +got):\n%s", diff)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
