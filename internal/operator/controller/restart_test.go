//go:build integration

package controller_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
	"github.com/drover-project/drover/internal/testenv"
)

// TestOperatorControllerRestarts submits 100 applications (drivers on a
// kwok node, which the test ends with exit code 0) to an operator in a
// process of its own that it kills (SIGKILL) at random points ten times:
// each application still runs exactly once, one driver pod created once
// (the API server's audit log), and ends Succeeded after one attempt.
func TestOperatorControllerRestarts(t *testing.T) {
	env, ns, c := setup(t)
	const n, kills = 100, 10
	start := func() *exec.Cmd {
		// The benchmark's operator process (bench_test.go), on every namespace.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), benchOperatorEnv+"="+env.Kubeconfig)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	op := start()
	t.Cleanup(func() { _ = op.Process.Kill(); _ = op.Wait() })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go endDrivers(ctx, t, env, ns)
	// Ten rounds: ten applications created, then the operator killed
	// between 50 ms and 1 s later, while it submits them, records their
	// pods or follows them, and started again.
	apps := make([]*v1alpha1.DroverApplication, 0, n)
	for round := range kills {
		for i := range n / kills {
			app := kwokDriverApp(ns, fmt.Sprintf("app-%03d", round*n/kills+i))
			if err := c.Create(t.Context(), app); err != nil {
				t.Fatal(err)
			}
			apps = append(apps, app)
		}
		time.Sleep(time.Duration(50+rand.IntN(950)) * time.Millisecond)
		_ = op.Process.Kill()
		_ = op.Wait()
		var list v1alpha1.DroverApplicationList
		if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		states := map[v1alpha1.State]int{}
		for _, a := range list.Items {
			states[a.Status.State]++
		}
		t.Logf("killed %d: applications by state %v", round+1, states)
		op = start()
	}
	t.Cleanup(func() {
		if t.Failed() {
			var list v1alpha1.DroverApplicationList
			_ = c.List(context.Background(), &list, client.InNamespace(ns))
			pods, _ := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "spark-role=driver"})
			byName := map[string]corev1.Pod{}
			for _, p := range pods.Items {
				byName[p.Name] = p
			}
			for _, a := range list.Items {
				if !a.Status.State.Final() {
					p, ok := byName[a.Status.DriverPod]
					t.Logf("%s: %s, driver pod %s there %v: %s, owners %v", a.Name, a.Status.State, a.Status.DriverPod,
						ok, p.Status.Phase, p.OwnerReferences)
				}
			}
			t.Logf("operator process %d alive: %v", op.Process.Pid, op.ProcessState == nil)
		}
	})
	for _, app := range apps {
		got, _ := waitFor(t, c, app, time.Minute, final)
		if st := got.Status; st.State != v1alpha1.StateSucceeded || st.Attempts != 1 {
			t.Errorf("%s: %s after %d attempts: %s", app.Name, st.State, st.Attempts, st.Message)
		}
	}
	creates := podCreates(t, env, ns)
	pods := driverPods(t, env, ns)
	owners := map[string]int{}
	for _, p := range pods {
		if o := metav1.GetControllerOf(&p); o != nil {
			owners[o.Name]++
		}
		if creates[p.Name] > 1 {
			t.Errorf("driver pod %s created %d times", p.Name, creates[p.Name])
		}
	}
	for _, app := range apps {
		if owners[app.Name] != 1 {
			t.Errorf("%s has %d driver pods", app.Name, owners[app.Name])
		}
	}
	// A create whose client was killed before the answer may be logged
	// without its 201: at most one each, and one pod each, is the proof.
	if len(pods) != n || len(creates) > n {
		t.Errorf("%d driver pods, %d created, want %d", len(pods), len(creates), n)
	}
}

// endDrivers ends every running driver pod of ns with exit code 0, as its
// driver would: kwok runs nothing.
func endDrivers(ctx context.Context, t *testing.T, env *testenv.Env, ns string) {
	for ctx.Err() == nil {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=driver"})
		if err != nil {
			time.Sleep(300 * time.Millisecond)
			continue
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			now := metav1.Now()
			p.Status.Phase = corev1.PodSucceeded
			for j := range p.Status.ContainerStatuses {
				p.Status.ContainerStatuses[j].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}
			}
			if _, err := env.Client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
				t.Logf("ending driver pod %s: %v", p.Name, err)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
}
