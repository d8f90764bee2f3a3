//go:build integration

package testenv_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/testenv"
)

func TestPodExitCodes(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)

	failing := procPod(ns, "fails", "/bin/sh", "-c", "echo hello $POD_NAME; echo to stderr >&2; exit 3")
	createPod(t, e, failing)
	ok := procPod(ns, "succeeds", "/bin/sh", "-c", "echo fine")
	ok.Spec.NodeSelector = nil
	ok.Spec.NodeName = e.ProcessNodeNames[1] // the agent's second node
	createPod(t, e, ok)

	p := waitPod(t, e, ns, "fails", "ended", time.Minute, ended)
	if p.Status.Phase != corev1.PodFailed {
		t.Errorf("phase = %s, want Failed", p.Status.Phase)
	}
	term := p.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" {
		t.Errorf("terminated state = %+v, want exit code 3, reason Error", term)
	}
	if ip := p.Status.PodIP; !strings.HasPrefix(ip, "127.") || ip == "127.0.0.1" {
		t.Errorf("pod IP = %q, want a loopback address of its own", ip)
	}
	logs, err := e.ProcessNode.Logs(ns, "fails")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("hello fails\nto stderr\n", string(logs)); diff != "" {
		t.Errorf("logs (-want,+got):\n%s", diff)
	}
	// The same through the API server, as kubectl logs reads them.
	apiLogs, err := e.Client.CoreV1().Pods(ns).GetLogs("fails", &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil || string(apiLogs) != string(logs) {
		t.Errorf("logs through the API = %q, %v; want %q", apiLogs, err, logs)
	}

	p = waitPod(t, e, ns, "succeeds", "ended", time.Minute, ended)
	term = p.Status.ContainerStatuses[0].State.Terminated
	if p.Status.Phase != corev1.PodSucceeded || term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Errorf("phase %s, terminated %+v; want Succeeded, exit code 0, reason Completed", p.Status.Phase, term)
	}
}

func TestPodCommandNotFound(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)
	for name, tc := range map[string]struct {
		cmd  string
		want string
	}{
		"absolute": {cmd: "/no/such/binary", want: "no such file or directory"},
		"in-path":  {cmd: "no-such-command-drover", want: "executable file not found in $PATH"},
	} {
		createPod(t, e, procPod(ns, name, tc.cmd))
		p := waitPod(t, e, ns, name, "ended", time.Minute, ended)
		term := p.Status.ContainerStatuses[0].State.Terminated
		if p.Status.Phase != corev1.PodFailed || term == nil || term.Reason != "StartError" || term.ExitCode != 128 || !strings.Contains(term.Message, tc.want) {
			t.Errorf("%s: phase %s, terminated %+v; want Failed, StartError, 128, message with %q", name, p.Status.Phase, term, tc.want)
		}
	}
}

// TestPodImageCannotBePulled: an image from a registry on .invalid keeps
// the pod Pending with the kubelet's pull errors, and the pod can still be
// deleted.
func TestPodImageCannotBePulled(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)
	pod := procPod(ns, "unpullable", "sleep", "60")
	pod.Spec.Containers[0].Image = "registry.invalid/drover:missing"
	createPod(t, e, pod)
	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff"} {
		p := waitPod(t, e, ns, pod.Name, "waiting with "+reason, time.Minute, func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == reason
		})
		w := p.Status.ContainerStatuses[0].State.Waiting
		if p.Status.Phase != corev1.PodPending || !strings.Contains(w.Message, "registry.invalid/drover:missing") {
			t.Errorf("phase %s, waiting %+v; want Pending and a message naming the image", p.Status.Phase, w)
		}
	}
	if err := e.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, e, ns, pod.Name, 30*time.Second)
}

func TestPodEnvironmentAndVolumes(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)
	ctx := t.Context()
	if _, err := e.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data:       map[string][]byte{"password": []byte("s3cret")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "conf"},
		Data:       map[string]string{"A": "from-a", "B": "from-b"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	script := `echo "ns=$POD_NS ip=$POD_IP node=$NODE host=$HOST_IP secret=$PASSWORD cm=$CM a=$CFG_A b=$CFG_B exp=$EXPANDED"
cat "$DROVER_VOLUME_SECRET_VOL/password"; echo
cat "$DROVER_VOLUME_CONF_VOL/A"; echo
v=$DROVER_SERVICEACCOUNT_DIR; test -s "$v/token" && echo token; test -s "$v/ca.crt" && echo ca; cat "$v/namespace"; echo
echo "k8s=$KUBERNETES_SERVICE_HOST"`
	pod := procPod(ns, "env", "/bin/sh", "-c", script)
	c := &pod.Spec.Containers[0]
	c.Env = append(c.Env,
		fieldEnv("POD_NS", "metadata.namespace"),
		fieldEnv("POD_IP", "status.podIP"),
		fieldEnv("NODE", "spec.nodeName"),
		fieldEnv("HOST_IP", "status.hostIP"),
		corev1.EnvVar{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
		corev1.EnvVar{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, Key: "B"}}},
		corev1.EnvVar{Name: "EXPANDED", Value: "$(POD_NAME)-$(CM)"},
	)
	c.EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "secret-vol", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "conf-vol", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
	}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "secret-vol", MountPath: "/etc/creds"}, {Name: "conf-vol", MountPath: "/etc/conf"}}
	createPod(t, e, pod)

	p := waitPod(t, e, ns, "env", "ended", time.Minute, ended)
	if p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("phase = %s, want Succeeded", p.Status.Phase)
	}
	logs, err := e.ProcessNode.Logs(ns, "env")
	if err != nil {
		t.Fatal(err)
	}
	want := "ns=" + ns + " ip=" + p.Status.PodIP + " node=" + p.Spec.NodeName + " host=127.0.0.1 secret=s3cret cm=from-b a=from-a b=from-b exp=env-from-b\n" +
		"s3cret\nfrom-a\ntoken\nca\n" + ns + "\n" + "k8s=127.0.0.1\n"
	if diff := cmp.Diff(want, string(logs)); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
}

func TestPodDeletion(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)

	t.Run("SIGTERM", func(t *testing.T) {
		pod := procPod(ns, "graceful", "/bin/sh", "-c", `trap 'echo got TERM; exit 0' TERM; echo started; sleep 1000 & wait`)
		pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
		createPod(t, e, pod)
		p := waitPod(t, e, ns, "graceful", "Running", time.Minute, running)
		waitLog(t, e, ns, "graceful", "started")
		pid := pidOf(t, p)
		if err := e.Client.CoreV1().Pods(ns).Delete(t.Context(), "graceful", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		took := waitGone(t, e, ns, "graceful", 20*time.Second)
		t.Logf("pod trapping SIGTERM gone %s after the delete", took.Round(time.Millisecond))
		if took > 10*time.Second {
			t.Errorf("deletion took %s; the process exits on SIGTERM at once", took)
		}
		waitLog(t, e, ns, "graceful", "got TERM")
		if alive(pid) {
			t.Errorf("process %d still alive after the pod is gone", pid)
		}
	})

	t.Run("SIGKILL after grace", func(t *testing.T) {
		pod := procPod(ns, "stubborn", "/bin/sh", "-c", `trap '' TERM; echo started; while :; do sleep 0.2; done`)
		pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
		createPod(t, e, pod)
		p := waitPod(t, e, ns, "stubborn", "Running", time.Minute, running)
		waitLog(t, e, ns, "stubborn", "started")
		pid := pidOf(t, p)
		if err := e.Client.CoreV1().Pods(ns).Delete(t.Context(), "stubborn", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		took := waitGone(t, e, ns, "stubborn", 30*time.Second)
		t.Logf("pod ignoring SIGTERM gone %s after the delete (grace 2s)", took.Round(time.Millisecond))
		if took < 2*time.Second {
			t.Errorf("pod gone after %s, before its 2s grace period", took)
		}
		if alive(pid) {
			t.Errorf("process %d still alive after the pod is gone", pid)
		}
	})
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func TestPodsListenOnTheSamePort(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, name := range []string{"server-a", "server-b"} {
		pod := procPod(ns, name, self)
		pod.Spec.NodeSelector = nil
		pod.Spec.NodeName = e.ProcessNodeNames[0]
		c := &pod.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: helperEnv, Value: "serve"}, corev1.EnvVar{Name: "PORT", Value: "18080"}, fieldEnv("POD_IP", "status.podIP"))
		createPod(t, e, pod)
	}
	for _, name := range []string{"server-a", "server-b"} {
		p := waitPod(t, e, ns, name, "Running", time.Minute, running)
		waitLog(t, e, ns, name, "listening")
		ips = append(ips, p.Status.PodIP)
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(p.Status.PodIP, "18080"), 5*time.Second)
		if err != nil {
			t.Fatalf("dialing %s at %s: %v", name, p.Status.PodIP, err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		got, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if err != nil || strings.TrimSpace(got) != name {
			t.Errorf("%s:18080 answered %q, %v; want %s", p.Status.PodIP, got, err, name)
		}
	}
	if ips[0] == ips[1] {
		t.Errorf("both pods have IP %s", ips[0])
	}
}

// TestPodRestartOnFailure: a container that fails twice and then succeeds
// is restarted in the same pod as a kubelet does it, at once after the first
// failure and after the (scaled-down) CrashLoopBackOff after the second.
func TestPodRestartOnFailure(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)
	// The working directory is the pod's own and survives restarts.
	pod := procPod(ns, "flaky", "/bin/sh", "-c", `n=$(cat runs 2>/dev/null || echo 0); n=$((n+1)); echo $n >runs
echo "run $n ip=$POD_IP uid=$POD_UID"; [ $n -gt 2 ] || exit 7`)
	pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	c := &pod.Spec.Containers[0]
	c.Env = append(c.Env, fieldEnv("POD_IP", "status.podIP"), fieldEnv("POD_UID", "metadata.uid"))
	seen := watchPod(t, e, ns, pod.Name)
	createPod(t, e, pod)
	p := waitPod(t, e, ns, "flaky", "ended", time.Minute, ended)

	cs := p.Status.ContainerStatuses[0]
	if p.Status.Phase != corev1.PodSucceeded || cs.RestartCount != 2 {
		t.Errorf("phase %s after %d restarts; want Succeeded after 2", p.Status.Phase, cs.RestartCount)
	}
	if term := cs.State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Errorf("terminated state = %+v, want exit code 0, reason Completed", term)
	}
	last := cs.LastTerminationState.Terminated
	if last == nil || last.ExitCode != 7 || last.Reason != "Error" || last.ContainerID == "" || last.ContainerID == cs.ContainerID || last.FinishedAt.IsZero() {
		t.Errorf("last termination = %+v; want the second run's: exit code 7, reason Error, its own container ID", last)
	}

	// Between the second failure and the third run it backed off, Running.
	var backoff *corev1.Pod
	for _, o := range seen() {
		if s := o.Status.ContainerStatuses; len(s) == 1 && s[0].State.Waiting != nil && s[0].State.Waiting.Reason == "CrashLoopBackOff" {
			backoff = o
			break
		}
	}
	if backoff == nil {
		t.Fatal("the container never waited in CrashLoopBackOff")
	}
	bs := backoff.Status.ContainerStatuses[0]
	want := "back-off 1s restarting failed container=main pod=flaky_" + ns + "(" + string(p.UID) + ")"
	if backoff.Status.Phase != corev1.PodRunning || bs.RestartCount != 1 || bs.State.Waiting.Message != want || bs.Ready {
		t.Errorf("backing off: phase %s, restarts %d, waiting %+v, ready %v; want Running, 1, message %q, not ready",
			backoff.Status.Phase, bs.RestartCount, bs.State.Waiting, bs.Ready, want)
	}
	if bl := bs.LastTerminationState.Terminated; bl == nil || bl.ExitCode != 7 || bl.Reason != "Error" {
		t.Errorf("last termination while backing off = %+v, want exit code 7, reason Error", bl)
	}

	// Every run was in the same pod: same IP, same UID, same directory.
	logs, _ := e.ProcessNode.Logs(ns, "flaky")
	id := " ip=" + p.Status.PodIP + " uid=" + string(p.UID) + "\n"
	if diff := cmp.Diff("run 1"+id+"run 2"+id+"run 3"+id, string(logs)); diff != "" {
		t.Errorf("logs (-want,+got):\n%s", diff)
	}
	// kubectl logs [--previous]: the current run, or the one before.
	for previous, want := range map[bool]string{false: "run 3" + id, true: "run 2" + id} {
		got, err := e.Client.CoreV1().Pods(ns).GetLogs("flaky", &corev1.PodLogOptions{Previous: previous}).DoRaw(t.Context())
		if err != nil || string(got) != want {
			t.Errorf("logs through the API, previous %v: %q, %v; want %q", previous, got, err, want)
		}
	}
}

// TestPodNeverRestarts: with restartPolicy Never a failed container stays
// failed.
func TestPodNeverRestarts(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)
	seen := watchPod(t, e, ns, "once")
	createPod(t, e, procPod(ns, "once", "/bin/sh", "-c", "echo ran; exit 5"))
	p := waitPod(t, e, ns, "once", "ended", time.Minute, ended)
	cs := p.Status.ContainerStatuses[0]
	if p.Status.Phase != corev1.PodFailed || cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 5 {
		t.Errorf("phase %s, restarts %d, state %+v; want Failed, 0, exit code 5", p.Status.Phase, cs.RestartCount, cs.State)
	}
	if cs.LastTerminationState != (corev1.ContainerState{}) {
		t.Errorf("last state = %+v, want none", cs.LastTerminationState)
	}
	for _, o := range seen() {
		if s := o.Status.ContainerStatuses; len(s) == 1 && (s[0].RestartCount != 0 || s[0].State.Waiting != nil && s[0].State.Waiting.Reason == "CrashLoopBackOff") {
			t.Errorf("status on the way: %+v", s[0])
		}
	}
	if logs, _ := e.ProcessNode.Logs(ns, "once"); string(logs) != "ran\n" {
		t.Errorf("logs = %q, want one run", logs)
	}
}

// watchPod records every version of pod ns/name from now on; the function
// it returns gives those seen so far.
func watchPod(t *testing.T, e *testenv.Env, ns, name string) func() []*corev1.Pod {
	t.Helper()
	w, err := e.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatalf("watching pod %s: %v", name, err)
	}
	var (
		mu   sync.Mutex
		seen []*corev1.Pod
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				mu.Lock()
				seen = append(seen, p)
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return func() []*corev1.Pod {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// TestPodServiceAccount runs a pod that builds an in-cluster client from
// what the process node gives it and asks the API server who it is.
func TestPodServiceAccount(t *testing.T) {
	e := cluster.Env(t)
	ns := e.NewNamespace(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pod := procPod(ns, "whoami", self)
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: helperEnv, Value: "whoami"})
	createPod(t, e, pod)
	p := waitPod(t, e, ns, "whoami", "ended", time.Minute, ended)
	logs, _ := e.ProcessNode.Logs(ns, "whoami")
	if want := "system:serviceaccount:" + ns + ":default\n"; p.Status.Phase != corev1.PodSucceeded || string(logs) != want {
		t.Errorf("phase %s, output %q; want Succeeded, %q", p.Status.Phase, logs, want)
	}
}
