//go:build integration

package testenv_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"go.uber.org/goleak"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/testenv"
	"github.com/drover-project/drover/internal/testenv/procnode"
)

// cluster is the control plane the package's tests share, each in its own
// namespace.
var cluster = &testenv.Shared{Options: testenv.Options{
	Scheduler:         true,
	ControllerManager: true,
	KwokNodes:         5,
	ProcessNodes:      2,
	// The kubelet's back-off, 10s doubling to 300s, scaled down tenfold.
	ProcessNodeBackoff:    time.Second,
	ProcessNodeMaxBackoff: 30 * time.Second,
}}

// helperEnv makes the test binary, run as a pod's command, act as a small
// server instead of running tests.
const helperEnv = "DROVER_TESTENV_HELPER"

// TestMain stops the shared control plane after the tests, then fails them
// if a goroutine they started outlives it.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	goleak.VerifyTestMain(stopAfter{m},
		// klog's flush daemon, started by client-go's logging on first use
		// and kept for the process's life.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	)
}

// stopAfter runs the tests, then stops the shared control plane, so that
// goleak looks for leaks once it is gone.
type stopAfter struct{ m *testing.M }

func (s stopAfter) Run() int {
	code := s.m.Run()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the shared control plane:", err)
		code = 1
	}
	return code
}

// poll calls ok every interval until it holds or timeout passed, and
// reports whether it held: the control plane, the process nodes' pods and
// the controllers are real processes, which only real time advances.
func poll(timeout, interval time.Duration, ok func() bool) bool {
	return wait.PollUntilContextTimeout(context.Background(), interval, timeout, true,
		func(context.Context) (bool, error) { return ok(), nil }) == nil
}

// helper "serve" listens on $POD_IP:$PORT and answers each connection with
// $POD_NAME; "whoami" prints the user its service account token stands for.
func helper(mode string) int {
	switch mode {
	case "serve":
	case "whoami":
		return whoami()
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(os.Getenv("POD_IP"), os.Getenv("PORT")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("listening on", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		fmt.Fprintln(c, os.Getenv("POD_NAME"))
		c.Close()
	}
}

func whoami() int {
	dir := os.Getenv(envvar.ServiceAccountDir)
	cfg := &rest.Config{
		Host:            "https://" + net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")),
		BearerTokenFile: filepath.Join(dir, "token"),
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, "ca.crt")},
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(r.Status.UserInfo.Username)
	return 0
}

// procPod is a pod for the process nodes running cmd.
func procPod(ns, name string, cmd ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{procnode.NodeLabel: "true"},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](10),
			Containers: []corev1.Container{{
				Name:    "main",
				Image:   "procnode", // ignored
				Command: cmd,
				Env:     []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name")},
			}},
		},
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func createPod(t *testing.T, e *testenv.Env, pod *corev1.Pod) {
	t.Helper()
	if _, err := e.Client.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
}

// waitPod polls pod ns/name until ok says so, failing t after timeout.
func waitPod(t *testing.T, e *testenv.Env, ns, name, what string, timeout time.Duration, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var last *corev1.Pod
	for {
		p, err := e.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if ok(p) {
				return p
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s/%s not %s after %s; last seen: phase %v, status %+v", ns, name, what, timeout, phase(last), status(last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func phase(p *corev1.Pod) corev1.PodPhase {
	if p == nil {
		return ""
	}
	return p.Status.Phase
}

func status(p *corev1.Pod) []corev1.ContainerStatus {
	if p == nil {
		return nil
	}
	return p.Status.ContainerStatuses
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

func ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// waitGone waits until pod ns/name no longer exists and returns how long
// that took.
func waitGone(t *testing.T, e *testenv.Env, ns, name string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	if !poll(timeout, 50*time.Millisecond, func() bool {
		_, err = e.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) {
		t.Fatalf("pod %s/%s still exists after %s (err %v)", ns, name, timeout, err)
	}
	return time.Since(start)
}

// waitLog waits until the pod's log contains want.
func waitLog(t *testing.T, e *testenv.Env, ns, name, want string) {
	t.Helper()
	var b []byte
	if !poll(30*time.Second, 50*time.Millisecond, func() bool {
		b, _ = e.ProcessNode.Logs(ns, name)
		return strings.Contains(string(b), want)
	}) {
		t.Fatalf("log of %s/%s has no %q after 30s: %q", ns, name, want, b)
	}
}

// pidOf returns the process ID in the first container's ID (procnode://PID).
func pidOf(t *testing.T, p *corev1.Pod) int {
	t.Helper()
	var pid int
	if len(p.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s has no container status", p.Name)
	}
	if _, err := fmt.Sscanf(p.Status.ContainerStatuses[0].ContainerID, "procnode://%d", &pid); err != nil {
		t.Fatalf("container ID %q: %v", p.Status.ContainerStatuses[0].ContainerID, err)
	}
	return pid
}
