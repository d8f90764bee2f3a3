package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/drover-project/drover/internal/k8s/submit"
)

func driverPod(name string, phase corev1.PodPhase, exit int32) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "spark",
			Labels: map[string]string{"spark-app-selector": "app-" + name, "spark-role": "driver"}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark-kubernetes-driver",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit}}}}
	}
	return p
}

// TestStatusExitCode: status exits with 1 when an application it shows
// failed or lost its driver, and says which; 0 otherwise.
func TestStatusExitCode(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lostExecutor := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "lost-exec-1", Namespace: "spark",
			Labels: map[string]string{"spark-app-selector": "drover-00000000000000aa", "spark-role": "executor"}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1,
				FinishedAt: metav1.NewTime(now.Add(-5 * time.Minute))}}}}},
	}
	testCases := map[string]struct {
		objs     []runtime.Object
		id       string
		wantCode int
		wantErr  string
		lines    int
	}{
		"running":   {objs: []runtime.Object{driverPod("a-driver", corev1.PodRunning, 0)}, id: "spark:a-driver", lines: 1},
		"succeeded": {objs: []runtime.Object{driverPod("a-driver", corev1.PodSucceeded, 0)}, id: "spark:a-driver", lines: 1},
		"failed": {objs: []runtime.Object{driverPod("a-driver", corev1.PodFailed, 2)}, id: "spark:a-driver",
			wantCode: 1, wantErr: "1 of 1 applications failed or lost their driver: spark:a-driver", lines: 1},
		"one failed of two": {objs: []runtime.Object{driverPod("a-driver", corev1.PodFailed, 2), driverPod("b-driver", corev1.PodRunning, 0)},
			id: "spark:*", wantCode: 1, wantErr: "1 of 2 applications failed or lost their driver: spark:a-driver", lines: 2},
		"client mode, driver gone": {objs: []runtime.Object{lostExecutor}, id: "spark:drover-00000000000000aa",
			wantCode: 1, wantErr: "lost their driver: spark:drover-00000000000000aa", lines: 1},
		"no match": {id: "spark:x-*", wantCode: 1, wantErr: "no driver pod and no application id matches x-*"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			id, err := submit.ParseID(tc.id, "default")
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = printStatus(context.Background(), fake.NewClientset(tc.objs...), id, now, &out)
			if diff := cmp.Diff(tc.wantCode, ExitCode(err)); diff != "" {
				t.Errorf("exit code (-want +got):\n%s", diff)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if n := strings.Count(out.String(), "\n"); n != tc.lines {
				t.Errorf("%d lines printed, want %d:\n%s", n, tc.lines, out.String())
			}
		})
	}
}
