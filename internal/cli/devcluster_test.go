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
	run := func(timeout time.Duration, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		return string(out), err
	}
	dc := func(args ...string) (string, error) {
		// --ttl: should this test be killed, the cluster stops by itself.
		if args[0] == "up" {
			args = append(args, "--ttl", "10m")
		}
		return run(4*time.Minute, drover, append(append([]string{"dev-cluster"}, args...), "--state-dir", state)...)
	}
	t.Cleanup(func() { _, _ = dc("down") })

	start = time.Now()
	out, err := dc("up")
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
	if out, err := dc("env"); err != nil || out != "export KUBECONFIG="+kubeconfig+"\n" {
		t.Errorf("env = %q, %v", out, err)
	}

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
