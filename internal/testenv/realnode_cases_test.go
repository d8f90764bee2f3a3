//go:build integration && realnode

package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestRealNodeKubeletCases checks, with the probe image, what only a real
// kubelet does and issue 42's cases rely on: the kernel's OOM kill under a
// memory limit, restarts in place, SIGTERM then SIGKILL after the grace
// period, a non-root user on a read-only root with a secret on tmpfs,
// emptyDir sizeLimit eviction, and pods reaching a server on the
// kubernetes Service's address without kube-proxy.
func TestRealNodeKubeletCases(t *testing.T) {
	if _, err := RunNetNSAddr(); err != nil && !RealNodeRequired() {
		t.Skipf("not in the run's network namespace (run make realnode): %v", err)
	}
	e := New(t, Options{Scheduler: true, ControllerManager: true})
	n := NewRealNode(t, e, "realnode-0")
	ns := e.NewNamespace(t)
	pods := e.Client.CoreV1().Pods(ns)

	probePod := func(name string, args ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector:  map[string]string{RealNodeLabel: "true"},
				Tolerations:   []corev1.Toleration{RealNodeToleration},
				Containers: []corev1.Container{{
					Name: "probe", Image: ProbeImage, ImagePullPolicy: corev1.PullNever, Args: args,
				}},
			},
		}
	}
	// wait polls the pod until done says so, failing with its status and
	// the kubelet's log after timeout.
	wait := func(t *testing.T, name string, timeout time.Duration, done func(*corev1.Pod) bool) *corev1.Pod {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var last *corev1.Pod
		for {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				last = p
				if done(p) {
					return p
				}
			}
			if ctx.Err() != nil {
				status := "none"
				if last != nil {
					status = fmt.Sprintf("%s %s %+v", last.Status.Phase, last.Status.Message, last.Status.ContainerStatuses)
				}
				t.Fatalf("pod %s: not there after %s; status %s\n--- kubelet ---\n%s", name, timeout, status, n.Logs(Kubelet, 30))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	ended := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}
	running := func(p *corev1.Pod) bool {
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Running != nil {
				return true
			}
		}
		return false
	}
	logs := func(t *testing.T, name string) string {
		t.Helper()
		b, err := pods.GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
		if err != nil {
			t.Fatalf("logs of %s: %v", name, err)
		}
		return string(b)
	}
	create := func(t *testing.T, p *corev1.Pod) {
		t.Helper()
		if _, err := pods.Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// gone deletes the pod with grace seconds and returns how long until
	// the kubelet had removed it.
	gone := func(t *testing.T, name string, grace int64) time.Duration {
		t.Helper()
		began := time.Now()
		if err := pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
		for time.Since(began) < time.Minute {
			if _, err := pods.Get(context.Background(), name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return time.Since(began)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("pod %s still there a minute after its deletion", name)
		return 0
	}

	t.Run("OOMKilled", func(t *testing.T) {
		p := probePod("oom", "alloc", "256")
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}
		create(t, p)
		got := wait(t, "oom", 2*time.Minute, ended)
		term := got.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
			t.Fatalf("container state %+v, want OOMKilled (exit 137)", got.Status.ContainerStatuses[0].State)
		}
		t.Logf("%s (exit %d) under a 32Mi limit", term.Reason, term.ExitCode)
	})

	t.Run("RestartInPlace", func(t *testing.T) {
		p := probePod("restart", "exit", "3")
		p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		create(t, p)
		got := wait(t, "restart", 2*time.Minute, func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount >= 1 &&
				p.Status.ContainerStatuses[0].LastTerminationState.Terminated != nil
		})
		cs := got.Status.ContainerStatuses[0]
		if cs.LastTerminationState.Terminated.ExitCode != 3 {
			t.Errorf("last state %+v, want exit code 3", cs.LastTerminationState.Terminated)
		}
		t.Logf("restartCount %d, last exit code %d, pod IP %s", cs.RestartCount, cs.LastTerminationState.Terminated.ExitCode, got.Status.PodIP)
	})

	t.Run("GracefulThenKilled", func(t *testing.T) {
		create(t, probePod("graceful", "term-after", "1"))
		create(t, probePod("stubborn", "noterm"))
		wait(t, "graceful", time.Minute, running)
		wait(t, "stubborn", time.Minute, running)
		// Give each container a moment to install its signal handler.
		time.Sleep(time.Second)
		dg := gone(t, "graceful", 20)
		ds := gone(t, "stubborn", 3)
		t.Logf("a container that exits 1 s after SIGTERM: gone in %s (grace 20 s); one that ignores SIGTERM: gone in %s (grace 3 s)", dg.Round(time.Millisecond), ds.Round(time.Millisecond))
		if dg > 15*time.Second {
			t.Errorf("graceful pod took %s, want well under its 20 s grace", dg)
		}
		if ds < 3*time.Second {
			t.Errorf("SIGTERM-ignoring pod gone after %s, before its 3 s grace", ds)
		}
	})

	t.Run("NonRootReadOnlyRootSecret", func(t *testing.T) {
		if _, err := e.Client.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"key": "sesame"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sc := &corev1.SecurityContext{RunAsUser: ptr.To[int64](65532), RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true)}
		mounts := []corev1.VolumeMount{{Name: "s", MountPath: "/etc/secret"}}
		for name, args := range map[string][]string{
			"id": {"id"}, "secret": {"cat", "/etc/secret/key"}, "mounts": {"cat", "/proc/self/mounts"}, "rofs": {"write", "/x", "1"},
		} {
			p := probePod(name, args...)
			p.Spec.Containers[0].SecurityContext = sc
			p.Spec.Containers[0].VolumeMounts = mounts
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
			create(t, p)
		}
		for _, name := range []string{"id", "secret", "mounts", "rofs"} {
			wait(t, name, 2*time.Minute, ended)
		}
		// The group is the image's /etc/passwd entry for 65532.
		if got := strings.TrimSpace(logs(t, "id")); got != "uid=65532 gid=65532" {
			t.Errorf("id: %q", got)
		}
		if got := logs(t, "secret"); got != "sesame" {
			t.Errorf("secret: %q", got)
		}
		var secretMount string
		for line := range strings.SplitSeq(logs(t, "mounts"), "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[1] == "/etc/secret" {
				secretMount = line
			}
			if f := strings.Fields(line); len(f) > 3 && f[1] == "/" && !strings.HasPrefix(f[3], "ro") {
				t.Errorf("root file system mounted %s, want ro", f[3])
			}
		}
		if !strings.Contains(secretMount, "tmpfs") {
			t.Errorf("secret volume mount %q, want tmpfs", secretMount)
		}
		if got := logs(t, "rofs"); !strings.Contains(got, "read-only file system") {
			t.Errorf("writing to the root: %q, want a read-only file system error", got)
		}
		t.Logf("uid 65532, read-only root, secret on %q", secretMount)
	})

	t.Run("EmptyDirSizeLimitEvicts", func(t *testing.T) {
		p := probePod("scratch", "write", "/scratch/f", "32")
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("8Mi"))}}}}
		began := time.Now()
		create(t, p)
		got := wait(t, "scratch", 3*time.Minute, ended)
		if got.Status.Phase != corev1.PodFailed || got.Status.Reason != "Evicted" {
			b, _ := os.ReadFile(filepath.Join(n.Dir, "kubelet.log"))
			var lines []string
			for l := range strings.SplitSeq(string(b), "\n") {
				if strings.Contains(strings.ToLower(l), "evict") || strings.Contains(l, "pod=\""+ns+"/scratch") {
					lines = append(lines, l)
				}
			}
			t.Errorf("pod %s with reason %q (%s), want Failed, Evicted; conditions %+v\n--- kubelet ---\n%s",
				got.Status.Phase, got.Status.Reason, got.Status.Message, got.Status.Conditions, strings.Join(lines, "\n"))
		}
		var conds []string
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.DisruptionTarget {
				conds = append(conds, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
			}
		}
		t.Logf("%s %s after %s: %s %v", got.Status.Phase, got.Status.Reason, time.Since(began).Round(time.Second), got.Status.Message, conds)
	})

	t.Run("PodsReachTheServiceAddress", func(t *testing.T) {
		ln, err := net.Listen("tcp", "10.0.0.1:443")
		if err != nil {
			t.Fatalf("listening on the kubernetes Service's address (hack/realnode-netns.sh puts it on %s): %v", RealNodeIface, err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		create(t, probePod("dial", "dial", "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"))
		got := wait(t, "dial", 2*time.Minute, ended)
		out := logs(t, "dial")
		if got.Status.Phase != corev1.PodSucceeded {
			t.Fatalf("dial: %s: %s", got.Status.Phase, out)
		}
		t.Logf("%s", strings.TrimSpace(out))
	})
}
