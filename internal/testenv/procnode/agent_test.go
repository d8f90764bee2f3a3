package procnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// startAgent runs an agent with one node against a fake clientset until the
// test ends.
func startAgent(t *testing.T) (*Agent, kubernetes.Interface) {
	t.Helper()
	client := fake.NewClientset()
	a, err := New(Config{
		Client:    client,
		NodeNames: []string{"n1"},
		Dir:       t.TempDir(),
		PodCIDR:   netip.MustParsePrefix("127.77.0.0/16"),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	return a, client
}

func pod(name string, grace int64, cmd ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName:                      "n1",
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "c", Image: "none", Command: cmd, Env: []corev1.EnvVar{
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			}}},
		},
	}
}

func waitFor(t *testing.T, what string, f func() (bool, error)) {
	t.Helper()
	// The agent's pods are real processes: poll in real time.
	var err error
	if wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (ok bool, _ error) {
			ok, err = f()
			return ok, nil
		}) != nil {
		t.Fatalf("%s: not after 30s (last error %v)", what, err)
	}
}

func TestAgentRegistersNode(t *testing.T) {
	_, client := startAgent(t)
	n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels[NodeLabel] != "true" || n.Status.Conditions[len(n.Status.Conditions)-1].Status != corev1.ConditionTrue {
		t.Errorf("node = %+v", n)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port == 0 {
		t.Error("no kubelet endpoint port")
	}
	waitFor(t, "lease", func() (bool, error) {
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(t.Context(), "n1", metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil, err
	})
}

func TestAgentRunsPod(t *testing.T) {
	a, client := startAgent(t)
	pods := client.CoreV1().Pods("ns")
	if _, err := pods.Create(t.Context(), pod("exits", 30, "/bin/sh", "-c", "echo hi $POD_NAME; exit 2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var p *corev1.Pod
	waitFor(t, "pod ends", func() (bool, error) {
		var err error
		p, err = pods.Get(t.Context(), "exits", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodFailed, err
	})
	if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 2 {
		t.Errorf("terminated = %+v, want exit code 2", term)
	}
	if logs, err := a.Logs("ns", "exits"); err != nil || string(logs) != "hi exits\n" {
		t.Errorf("Logs = %q, %v", logs, err)
	}
	if _, err := a.Logs("ns", "never"); err == nil {
		t.Error("Logs of an unknown pod succeeded")
	}
}

// TestAgentKillsOnDeleteAndStop: a pod deleted outright (grace 0, as the
// fake clientset does) is killed; Run's end kills what still runs.
func TestAgentKillsOnDeleteAndStop(t *testing.T) {
	client := fake.NewClientset()
	a, err := New(Config{Client: client, NodeNames: []string{"n1"}, Dir: t.TempDir(), PodCIDR: netip.MustParsePrefix("127.78.0.0/16"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	<-a.Ready()
	pods := client.CoreV1().Pods("ns")
	pids := map[string]int{}
	for _, name := range []string{"deleted", "left"} {
		if _, err := pods.Create(t.Context(), pod(name, 30, "/bin/sh", "-c", "trap '' TERM; sleep 1000"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, name+" running", func() (bool, error) {
			p, err := pods.Get(t.Context(), name, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning {
				return false, err
			}
			var pid int
			_, err = fmt.Sscanf(p.Status.ContainerStatuses[0].ContainerID, "procnode://%d", &pid)
			pids[name] = pid
			return err == nil, err
		})
	}
	if err := pods.Delete(t.Context(), "deleted", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "deleted pod's process killed", func() (bool, error) { return !alive(pids["deleted"]), nil })
	if !alive(pids["left"]) {
		t.Fatal("the other pod's process died too")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if alive(pids["left"]) {
		t.Error("a pod process survived the agent's Run")
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
