//go:build integration

package drover

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/testenv"
)

// cluster is one real control plane (etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager for resource quotas, a process node) shared by
// this package's Kubernetes tests.
func init() {
	afterTests = append(afterTests, func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test control plane:", err)
		}
	})
}

var cluster = &testenv.Shared{Options: testenv.Options{Scheduler: true, ControllerManager: true, ProcessNodes: 1,
	AuditPodCreates: true}}

var slowSquare = Register("test.slowSquare", func(tc *TaskContext, n int) (int, error) {
	select {
	case <-time.After(300 * time.Millisecond):
	case <-tc.Done():
		return 0, tc.Err()
	}
	return n * n, nil
})

// k8sArgs are the driver flags of a client-mode application on env.
func k8sArgs(env *testenv.Env, ns string, extra ...string) []string {
	args := []string{"--master", "k8s://" + env.URL,
		"--conf", "spark.kubernetes.namespace=" + ns,
		"--conf", "spark.kubernetes.container.image=drover-test:latest",
		"--conf", "spark.driver.host=127.0.0.1",
		"--conf", "drover.log.level=" + logLevel(),
	}
	for _, e := range extra {
		args = append(args, "--conf", e)
	}
	return args
}

func appObjects(t *testing.T, env *testenv.Env, ns string) (pods []corev1.Pod, cms []string) {
	t.Helper()
	ctx := context.Background()
	pl, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := env.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cl.Items {
		cms = append(cms, cm.Name)
	}
	return pl.Items, cms
}

func TestClientModeOnKubernetes(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)

	// The executor image holds the binary elsewhere than this machine.
	bin := linkedCopy(t)
	var stderr bytes.Buffer
	var got []int
	var seen []corev1.Pod
	code := runDriver(k8sArgs(env, ns, "spark.executor.instances=2", "spark.executor.memory=256m",
		"drover.kubernetes.executor.binary="+bin), &stderr, func(ctx *Context) error {
		var err error
		got, err = RunPartitions(ctx, square, []int{1, 2, 3, 4, 5, 6, 7, 8})
		seen, _ = appObjects(t, env, ns)
		return err
	})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	for i, v := range got {
		if v != (i+1)*(i+1) {
			t.Fatalf("results %v", got)
		}
	}
	// The executor pods ran real executor processes with the expected spec.
	if len(seen) != 2 {
		t.Fatalf("saw %d executor pods during the job, want 2", len(seen))
	}
	for _, p := range seen {
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s during the job", p.Name, p.Status.Phase)
		}
		c := p.Spec.Containers[0]
		if p.Labels["spark-app-selector"] == "" || p.Labels["spark-exec-id"] == "" || !strings.Contains(p.Name, "-exec-") {
			t.Errorf("pod %s lacks executor labels or name: %v", p.Name, p.Labels)
		}
		if lim := c.Resources.Limits.Memory().Value(); lim != (256+384)<<20 {
			t.Errorf("pod %s memory limit %d, want 256m + 384m overhead", p.Name, lim)
		}
		if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("pod %s restart policy %s", p.Name, p.Spec.RestartPolicy)
		}
		if len(c.Command) == 0 || c.Command[0] != bin {
			t.Errorf("pod %s runs %v, want %s (drover.kubernetes.executor.binary)", p.Name, c.Command, bin)
		}
		// Mutual TLS by default: the executors' key material comes only
		// from the application's Secret, never inline in the spec.
		if !readsTLSFromSecret(c) {
			t.Errorf("pod %s does not read %s from the application's Secret: %v", p.Name, envvar.TLS, c.Env)
		}
		if spec, _ := json.Marshal(p.Spec); strings.Contains(string(spec), "PRIVATE KEY") || strings.Contains(string(spec), "DROVER TLS SESSION") {
			t.Errorf("pod %s carries key material in its spec", p.Name)
		}
		// Admitted without the API token the service-account admission
		// would otherwise mount.
		for _, v := range p.Spec.Volumes {
			if v.Projected != nil && strings.HasPrefix(v.Name, "kube-api-access") {
				t.Errorf("pod %s mounts the API token (volume %s)", p.Name, v.Name)
			}
		}
	}
	// Nothing of the application remains: the driver deleted its pods
	// (they may take their grace period to go) and its config map.
	pods, cms := appObjects(t, env, ns)
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			t.Errorf("executor pod %s was not deleted", p.Name)
		}
	}
	if len(cms) != 0 {
		t.Errorf("config maps %v remain", cms)
	}
	pollUntil(30*time.Second, 100*time.Millisecond, func() bool {
		pods, _ = appObjects(t, env, ns)
		return len(pods) == 0
	})
	if len(pods) != 0 {
		t.Errorf("%d executor pods still exist 30s after the application ended", len(pods))
	}
}

// linkedCopy is this test binary under another path, as an executor image
// would hold the application binary.
func linkedCopy(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "app-in-image")
	if err := os.Link(exe, bin); err != nil {
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func TestDeletedExecutorPodIsReplaced(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)

	var stderr bytes.Buffer
	var got []int
	var once sync.Once
	var victim string
	var after []corev1.Pod
	code := runDriver(k8sArgs(env, ns, "spark.executor.instances=2", "spark.task.maxFailures=1"), &stderr, func(ctx *Context) error {
		go func() {
			// Delete one executor pod while tasks run on it. Real time:
			// the tasks run in the executor pods' processes.
			time.Sleep(500 * time.Millisecond)
			once.Do(func() {
				pods, _ := appObjects(t, env, ns)
				if len(pods) > 0 {
					victim = pods[0].Name
					_ = env.Client.CoreV1().Pods(ns).Delete(context.Background(), victim, metav1.DeleteOptions{})
				}
			})
		}()
		inputs := make([]int, 24)
		for i := range inputs {
			inputs[i] = i
		}
		var err error
		got, err = RunPartitions(ctx, slowSquare, inputs)
		after, _ = appObjects(t, env, ns)
		return err
	})
	if code != 0 {
		t.Fatalf("exit code %d (deleted pod %q); stderr:\n%s", code, victim, stderr.String())
	}
	if victim == "" {
		t.Fatal("no executor pod was deleted")
	}
	for i, v := range got {
		if v != i*i {
			t.Fatalf("results %v", got)
		}
	}
	replaced := false
	for _, p := range after {
		replaced = replaced || p.Labels["spark-exec-id"] == "3"
	}
	if !replaced {
		t.Errorf("no replacement executor pod (id 3) after %s was deleted; pods: %d; stderr:\n%s", victim, len(after), stderr.String())
	}
}

func TestBadKubernetesConfFailsBeforeAnyPod(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	tmpl := t.TempDir() + "/template.yaml"
	if err := os.WriteFile(tmpl, []byte("kind: Pod\napiVersion: v1\nspec:\n  containers: not-a-list\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args []string
		want string
	}{
		"no image":         {[]string{"--master", "k8s://" + env.URL, "--conf", "spark.kubernetes.namespace=" + ns, "--conf", "spark.driver.host=127.0.0.1"}, "image"},
		"invalid template": {k8sArgs(env, ns, "spark.kubernetes.executor.podTemplateFile="+tmpl), "podTemplateFile"},
		"relative binary":  {k8sArgs(env, ns, "drover.kubernetes.executor.binary=bin/app"), "drover.kubernetes.executor.binary=bin/app: expected the absolute path"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			ran := false
			code := runDriver(tc.args, &stderr, func(*Context) error { ran = true; return nil })
			if code == 0 || ran {
				t.Fatalf("exit code %d, ran %v; stderr:\n%s", code, ran, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr does not name %q:\n%s", tc.want, stderr.String())
			}
			pods, cms := appObjects(t, env, ns)
			if len(pods)+len(cms) != 0 {
				t.Errorf("created %d pods and config maps %v", len(pods), cms)
			}
		})
	}
}

func logLevel() string {
	if l := os.Getenv("DROVER_TEST_LOG_LEVEL"); l != "" {
		return l
	}
	return "warn"
}

// readsTLSFromSecret reports whether a container reads the executors' TLS
// bundle from drover's Secret, key tls.pem.
func readsTLSFromSecret(c corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == envvar.TLS && e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
			e.ValueFrom.SecretKeyRef.Key == podspec.TLSKey {
			return true
		}
	}
	return false
}
