//go:build integration

package testenv_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/drover-project/drover/internal/testenv"
)

func TestKueueDirMissing(t *testing.T) {
	t.Setenv("DROVER_KUEUE", t.TempDir())
	_, err := testenv.KueueDir()
	if !errors.Is(err, testenv.ErrMissingKueue) || !strings.Contains(err.Error(), "./hack/build-kueue.sh") {
		t.Errorf("KueueDir() error = %v; want ErrMissingKueue saying how to build it", err)
	}
}

// Kueue in the environment: a pod with a queue label in a Kueue namespace
// is gated, admitted while the ClusterQueue's quota fits it and then runs on
// kwok; one that does not fit stays gated; the same label in a namespace
// Kueue does not manage does nothing.
func TestKueue(t *testing.T) {
	env := testenv.New(t, testenv.Options{Scheduler: true, KwokNodes: 1, Kueue: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := env.NewKueueNamespace(t)
	if err := env.Kueue.CreateQueue(ctx, ns, "team-a", "cq-"+ns, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}); err != nil {
		t.Fatal(err)
	}
	queued := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kueue.x-k8s.io/queue-name": "team-a"}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{testenv.KwokNodeLabel: "true"},
				Tolerations:  []corev1.Toleration{testenv.KwokToleration},
				Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			},
		}
	}
	for _, name := range []string{"first", "second"} {
		p, err := env.Client.CoreV1().Pods(ns).Create(ctx, queued(name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Spec.SchedulingGates) == 0 {
			t.Fatalf("pod %s created without Kueue's gate", name)
		}
	}
	// Kueue and the scheduler are real controllers: poll until ctx ends.
	var p *corev1.Pod
	_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		var err error
		p, err = env.Client.CoreV1().Pods(ns).Get(ctx, "first", metav1.GetOptions{})
		if err != nil {
			// What Kueue made of the pods, for the failure's reader.
			if wls, lerr := env.Kueue.Dynamic.Resource(testenv.WorkloadGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{}); lerr == nil {
				for _, wl := range wls.Items {
					conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
					t.Logf("workload %s: %v", wl.GetName(), conds)
				}
			}
			t.Fatal(err)
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if p.Status.Phase != corev1.PodRunning {
		t.Fatalf("the first pod not running: gates %v, phase %s", p.Spec.SchedulingGates, p.Status.Phase)
	}
	second, err := env.Client.CoreV1().Pods(ns).Get(ctx, "second", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Spec.SchedulingGates) == 0 {
		t.Errorf("the second pod was admitted beyond the quota")
	}
	plain := env.NewNamespace(t)
	p, err = env.Client.CoreV1().Pods(plain).Create(ctx, queued("elsewhere"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.SchedulingGates) > 0 || len(p.Finalizers) > 0 {
		t.Errorf("a pod of a namespace Kueue does not manage got gates %v, finalizers %v", p.Spec.SchedulingGates, p.Finalizers)
	}
}
