//go:build integration

package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/testenv"
)

func TestBinDirMissing(t *testing.T) {
	t.Setenv("DROVER_TESTBIN", t.TempDir())
	_, err := testenv.BinDir()
	if !errors.Is(err, testenv.ErrMissingBinaries) || !strings.Contains(err.Error(), "make testbin") || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Errorf("BinDir() error = %v; want ErrMissingBinaries naming kube-apiserver and make testbin", err)
	}
}

// TestStartFailureShowsLog starts a control plane whose API server fails at
// once: the error must carry its log, and nothing may be left behind.
func TestStartFailureShowsLog(t *testing.T) {
	real, err := testenv.BinDir()
	if err != nil {
		testenv.Unavailable(t, err)
	}
	bin := t.TempDir()
	if err := os.Symlink(filepath.Join(real, testenv.Etcd), filepath.Join(bin, testenv.Etcd)); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\necho 'E0000 the fake API server gives up'\nexit 7\n"
	if err := os.WriteFile(filepath.Join(bin, testenv.KubeAPIServer), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DROVER_TESTBIN", bin)
	parent := t.TempDir()
	_, err = testenv.Start(t.Context(), testenv.Options{Dir: parent, StartTimeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver") || !strings.Contains(err.Error(), "the fake API server gives up") {
		t.Fatalf("Start() error = %v; want one naming kube-apiserver with its log", err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("left behind in %s: %v", parent, left)
	}
}

// TestStopLeavesNothing runs every kind of component and a pod process, then
// checks that Stop kills all of them and removes the directory.
func TestStopLeavesNothing(t *testing.T) {
	if _, err := testenv.BinDir(); err != nil {
		testenv.Unavailable(t, err)
	}
	e, err := testenv.Start(t.Context(), testenv.Options{
		Scheduler: true, ControllerManager: true, KwokNodes: 1, ProcessNodes: 1, Logf: t.Logf,
	})
	if err != nil {
		testenv.Unavailable(t, err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	t.Logf("control plane with every component started in %s", e.StartDuration.Round(time.Millisecond))
	ns := e.NewNamespace(t)
	createPod(t, e, procPod(ns, "sleeper", "/bin/sh", "-c", "trap '' TERM; sleep 1000"))
	p := waitPod(t, e, ns, "sleeper", "Running", time.Minute, running)
	pids := append(e.PIDs(), pidOf(t, p))
	if len(pids) != 6 { // etcd, apiserver, scheduler, controller-manager, kwok, pod
		t.Errorf("PIDs = %v, want 5 components and a pod", pids)
	}
	start := time.Now()
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop took %s", time.Since(start).Round(time.Millisecond))
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is alive after Stop", pid)
		}
	}
	if _, err := os.Stat(e.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after Stop (err %v)", e.Dir, err)
	}
	if err := e.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// TestGarbageCollection checks that the controller manager's garbage
// collector deletes dependents, pods on process nodes included (their
// processes are stopped first).
func TestGarbageCollection(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)
	ctx := t.Context()
	cms := e.Client.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownedBy := func(kind, name string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: name, UID: uid}}
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: ownedBy("ConfigMap", "owner", owner.UID)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := procPod(ns, "dependent-pod", "/bin/sh", "-c", "sleep 1000 & wait")
	pod.OwnerReferences = ownedBy("ConfigMap", "owner", owner.UID)
	createPod(t, e, pod)
	ownerPod := procPod(ns, "owner-pod", "/bin/sh", "-c", "sleep 1000 & wait")
	createPod(t, e, ownerPod)
	p := waitPod(t, e, ns, "dependent-pod", "Running", time.Minute, running)
	pid := pidOf(t, p)
	op := waitPod(t, e, ns, "owner-pod", "Running", time.Minute, running)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned-by-pod", OwnerReferences: ownedBy("Pod", "owner-pod", op.UID)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	background := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	if err := cms.Delete(ctx, "owner", background); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.CoreV1().Pods(ns).Delete(ctx, "owner-pod", background); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitGone(t, e, ns, "dependent-pod", time.Minute)
	for _, name := range []string{"dependent", "owned-by-pod"} {
		var err error
		if !poll(time.Until(start.Add(time.Minute)), 100*time.Millisecond, func() bool {
			_, err = cms.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}) {
			t.Fatalf("configmap %s still exists a minute after its owner was deleted (err %v)", name, err)
		}
	}
	t.Logf("dependents collected in %s", time.Since(start).Round(time.Millisecond))
	if alive(pid) {
		t.Errorf("the collected pod's process %d is alive", pid)
	}
}

// TestThousandPodsOnKwok schedules 1,000 pods onto kwok nodes and waits for
// all of them to run. The figure is logged, not asserted.
func TestThousandPodsOnKwok(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)
	const n, workers = 1000, 16
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sim-%04d", i), Labels: map[string]string{"app": "sim"}},
					Spec: corev1.PodSpec{
						NodeSelector: map[string]string{testenv.KwokNodeLabel: "true"},
						Tolerations:  []corev1.Toleration{testenv.KwokToleration},
						Containers:   []corev1.Container{{Name: "main", Image: "simulated"}},
					},
				}
				if _, err := e.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating pods: %v", err)
	}
	created := time.Since(start)
	for {
		list, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=sim", ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("listing pods: %v", err)
		}
		run := 0
		for i := range list.Items {
			if list.Items[i].Status.Phase == corev1.PodRunning {
				run++
			}
		}
		if run == n {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d pods Running after %s", run, n, time.Since(start))
		case <-time.After(250 * time.Millisecond):
		}
	}
	t.Logf("%d pods on %d kwok nodes: created in %s (%d clients), all Running after %s",
		n, len(e.KwokNodeNames), created.Round(time.Millisecond), workers, time.Since(start).Round(time.Millisecond))
}

// TestRestartAndAudit kills kube-apiserver and etcd as a crash would, starts
// them again on the same data, and reads the pod creates from the audit log.
func TestRestartAndAudit(t *testing.T) {
	e := testenv.New(t, testenv.Options{AuditPodCreates: true})
	ns := e.NewNamespace(t)
	cfg := *e.Config
	cfg.UserAgent = "restart-test/1"
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: "nowhere", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{testenv.KubeAPIServer, testenv.Etcd} {
		if err := e.Kill(name); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Pods(ns).Get(t.Context(), "before", metav1.GetOptions{}); err == nil && name == testenv.KubeAPIServer {
			t.Fatalf("the API server answers after Kill")
		}
		if _, err := e.Restart(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Pods(ns).Get(t.Context(), "before", metav1.GetOptions{}); err != nil {
		t.Fatalf("the pod created before the restarts: %v", err)
	}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod("before"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating it again: %v, want AlreadyExists", err)
	}
	creates, err := e.PodCreates("restart-test/")
	if err != nil {
		t.Fatal(err)
	}
	var codes []int
	for _, c := range creates {
		codes = append(codes, c.Code)
	}
	if len(codes) != 2 || codes[0] != 201 || codes[1] != 409 {
		t.Errorf("audited pod creates %+v, want a 201 and a 409", creates)
	}
}
