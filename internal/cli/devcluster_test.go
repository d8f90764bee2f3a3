//go:build integration

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/drover-project/drover/internal/testenv"
)

// TestDevCluster builds the drover binary and drives `drover dev-cluster`
// the way a user would: up, up again, kubectl against it (a pod running
// /bin/echo on the process node, its logs), status, env, down, and checks
// that no process and no file is left.
func TestDevCluster(t *testing.T) {
	bin, err := testenv.FindBinaries(testenv.Etcd, testenv.KubeAPIServer, testenv.KubeScheduler, testenv.KubeControllerManager, testenv.Kubectl)
	if err != nil {
		testenv.Unavailable(t, err)
	}
	kubectl := filepath.Join(bin, testenv.Kubectl)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()

	tmp := t.TempDir()
	drover := filepath.Join(tmp, "drover")
	start := time.Now()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", drover, "github.com/drover-project/drover/cmd/drover").CombinedOutput(); err != nil {
		t.Fatalf("building drover: %v\n%s", err, out)
	}
	t.Logf("built drover in %s", time.Since(start).Round(time.Millisecond))
	state := filepath.Join(tmp, "state")
	// The dev cluster remembers a --state-dir beside the default state
	// directory, which must not be the user's.
	env := append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(tmp, "xdg"))
	run := func(timeout time.Duration, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		c := exec.CommandContext(ctx, name, args...)
		c.Env = env
		out, err := c.CombinedOutput()
		return string(out), err
	}
	dc := func(args ...string) (string, error) {
		// --ttl: should this test be killed, the cluster stops by itself.
		if args[0] == "up" {
			args = append(args, "--ttl", "10m")
		}
		return run(4*time.Minute, drover, append(append([]string{"dev-cluster"}, args...), "--state-dir", state)...)
	}
	t.Cleanup(func() {
		// ctx is done by now: down needs its own context.
		c := exec.Command(drover, "dev-cluster", "down", "--state-dir", state)
		c.Env = env
		_ = c.Run()
	})

	start = time.Now()
	out, err := dc("up")
	upOut := out
	if err != nil {
		testenv.Unavailable(t, errors.New(out+err.Error()))
	}
	t.Logf("dev-cluster up in %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	m := regexp.MustCompile(`export KUBECONFIG=(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("up printed no kubeconfig:\n%s", out)
	}
	kubeconfig := m[1]
	if !strings.Contains(out, kubectl+" get nodes") || !strings.Contains(out, "drover submit --master k8s://https://127.0.0.1:") {
		t.Errorf("up's usage lacks the kubectl or submit line:\n%s", out)
	}
	var st devClusterState
	b, err := os.ReadFile(filepath.Join(state, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	pids := append([]int{st.PID}, st.ComponentPIDs...)
	if fi, err := os.Stat(filepath.Join(state, stateFile)); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("the state file, which holds the object store's keys, has mode %v, want 0600", fi.Mode().Perm())
	}

	if out, err := dc("up"); err != nil || !strings.Contains(out, "already up") {
		t.Errorf("second up: %v\n%s", err, out)
	}

	k := func(args ...string) string {
		t.Helper()
		out, err := run(time.Minute, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	if out := k("get", "nodes"); !strings.Contains(out, "procnode-0") || !strings.Contains(out, "Ready") {
		t.Errorf("kubectl get nodes:\n%s", out)
	}
	k("run", "echo", "--image=procnode", "--restart=Never", "--command", "--", "/bin/echo", "hello from a pod")
	k("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/echo", "--timeout=60s")
	if out := k("logs", "echo"); out != "hello from a pod\n" {
		t.Errorf("kubectl logs echo = %q", out)
	}
	manifest := filepath.Join(tmp, "pod.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata: {name: applied}
spec:
  restartPolicy: Never
  containers:
  - {name: main, image: procnode, command: [/bin/echo, applied]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	k("apply", "-f", manifest)
	k("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/applied", "--timeout=60s")

	if out, err := dc("status"); err != nil || !strings.Contains(out, "up: API server "+st.URL+" (responding)") {
		t.Errorf("status: %v\n%s", err, out)
	}
	if out, err := dc("env"); err != nil || !strings.HasPrefix(out, "export KUBECONFIG="+kubeconfig+"\nexport DROVER_DEV_MASTER=k8s://"+st.URL+"\n") ||
		st.S3 == nil || !strings.Contains(out, "export DROVER_DEV_S3_ENDPOINT="+st.S3.Endpoint+"\n") {
		t.Errorf("env = %q, %v", out, err)
	}
	// Without --state-dir, the verbs find the cluster up started with it.
	if out, err := run(time.Minute, drover, "dev-cluster", "status"); err != nil || !strings.Contains(out, "up: API server "+st.URL) {
		t.Errorf("status without --state-dir: %v\n%s", err, out)
	}
	if !strings.Contains(upOut, "Stop it with: drover dev-cluster down --state-dir "+state+"\n") {
		t.Errorf("up's usage does not repeat --state-dir:\n%s", upOut)
	}

	// Without kubectl: drover rbac --apply and drover logs.
	env = append(env, "KUBECONFIG="+kubeconfig)
	testRBACApplyAndLogs(ctx, t, drover, "k8s://"+st.URL, kubeconfig, run)

	start = time.Now()
	if out, err := dc("down"); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
	t.Logf("dev-cluster down in %s", time.Since(start).Round(time.Millisecond))
	for _, pid := range pids {
		if running(pid) {
			t.Errorf("process %d still runs after down", pid)
		}
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state directory %s remains after down (%v)", state, err)
	}
	if out, err := dc("status"); err != nil || strings.TrimSpace(out) != "down" {
		t.Errorf("status after down = %q, %v", out, err)
	}
}

// running reports whether pid is a live process. The daemon is nobody's
// child once up returns, so it may linger as a zombie where init doesn't
// reap: that counts as dead.
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true // no /proc: trust kill
	}
	// pid (comm) state ...: comm may hold spaces, the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// testRBACApplyAndLogs drives drover rbac --apply and drover logs against
// a running cluster, checking what they did through the API: the account
// may do what a driver does and nothing else, applying twice is harmless,
// and logs prints a driver pod's log.
func testRBACApplyAndLogs(ctx context.Context, t *testing.T, drover, master, kubeconfig string, run func(time.Duration, string, ...string) (string, error)) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(cfg)
	const ns = "rbac-apply"
	for range 2 { // the second run must change nothing and not fail
		out, err := run(time.Minute, drover, "rbac", "--apply", "--namespace", ns, "--create-namespace", "--pod-security", "restricted", "--master", master)
		if err != nil {
			t.Fatalf("drover rbac --apply: %v\n%s", err, out)
		}
		for _, want := range []string{"applied namespace " + ns, "applied serviceaccount " + ns + "/drover-driver",
			"applied role " + ns + "/drover-driver", "applied rolebinding " + ns + "/drover-driver",
			"applied validatingadmissionpolicy drover-confine." + ns + ".drover-driver",
			"applied validatingadmissionpolicybinding drover-confine." + ns + ".drover-driver"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("rbac --apply output lacks %q:\n%s", want, out)
			}
		}
	}
	n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s enforces %q, want restricted", ns, got)
	}
	// What the account may do, asked of the API server as the account.
	saCfg := rest.CopyConfig(cfg)
	saCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":drover-driver"}
	sa := kubernetes.NewForConfigOrDie(saCfg)
	if _, err := sa.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the driver's account cannot list pods: %v", err)
	}
	if _, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the driver's account lists secrets (err %v), want forbidden", err)
	}
	if out, err := run(time.Minute, drover, "rbac", "--apply", "--namespace", ns, "--pod-security", "open"); err == nil || !strings.Contains(out, "--pod-security") {
		t.Errorf("rbac --apply with a bad --pod-security: %v\n%s", err, out)
	}

	// A pod labelled as a driver, whose log drover logs prints.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-driver", Labels: map[string]string{"spark-role": "driver", "spark-app-selector": "spark-hello"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "spark-kubernetes-driver", Image: "procnode", Command: []string{"/bin/echo", "hello from the driver"}}}},
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The dev cluster's node runs the pod as a process: poll.
	var p *corev1.Pod
	if wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		p, err = admin.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded, nil
	}) != nil {
		t.Fatalf("pod %s did not succeed: %v %+v", pod.Name, err, p.Status)
	}
	for _, args := range [][]string{{"default:hello-driver"}, {"-f", "default:hello-driver"}, {"--tail", "1", "default:hello-*"}} {
		out, err := run(time.Minute, drover, append([]string{"logs", "--master", master}, args...)...)
		if err != nil || out != "hello from the driver\n" {
			t.Errorf("drover logs %s = %q, %v", strings.Join(args, " "), out, err)
		}
	}
	if out, err := run(time.Minute, drover, "logs", "--master", master, "default:nobody-driver"); err == nil || !strings.Contains(out, "nobody-driver") {
		t.Errorf("drover logs of a missing application: %v\n%s", err, out)
	}
}
