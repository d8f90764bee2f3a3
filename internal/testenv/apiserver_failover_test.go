//go:build integration

package testenv_test

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/drover-project/drover/internal/testenv"
)

// TestAPIServerFailoverEnvHasTwoServers: with Options.APIServers 2 the
// environment runs two kube-apiservers over one etcd, on their own ports:
// an object created through one is read through the other; the first,
// killed, refuses connections while the second still serves the object;
// restarted, it serves again on its port with the second's later writes.
// In front of them Env.URL and Env.Kubeconfig reach whichever lives, and so
// do the scheduler and kwok: with either server killed, clients of the front
// keep working and pods keep being scheduled and run.
func TestAPIServerFailoverEnvHasTwoServers(t *testing.T) {
	e := testenv.New(t, testenv.Options{APIServers: 2, Scheduler: true, KwokNodes: 1})
	ctx := t.Context()
	if len(e.URLs) != 2 || e.URLs[0] == e.URLs[1] || slices.Contains(e.URLs, e.URL) {
		t.Fatalf("URLs %v, URL %s: want two distinct servers' URLs, and URL, the front, apart", e.URLs, e.URL)
	}
	if len(e.Kubeconfigs) != 2 || e.Kubeconfigs[0] == e.Kubeconfigs[1] || slices.Contains(e.Kubeconfigs, e.Kubeconfig) {
		t.Fatalf("Kubeconfigs %v, Kubeconfig %s: want two, one per server, and Kubeconfig, the front's, apart", e.Kubeconfigs, e.Kubeconfig)
	}
	for i, kc := range e.Kubeconfigs {
		if host := kubeconfigHost(t, kc); host != e.URLs[i] {
			t.Errorf("Kubeconfigs[%d] reaches %s; want %s, server %d", i, host, e.URLs[i], i)
		}
	}
	if host := kubeconfigHost(t, e.Kubeconfig); host != e.URL || e.Config.Host != e.URL {
		t.Errorf("Kubeconfig reaches %s, Config %s; want URL, %s", host, e.Config.Host, e.URL)
	}
	frontCfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	front, err := kubernetes.NewForConfig(frontCfg)
	if err != nil {
		t.Fatal(err)
	}
	// Connected through the front before any kill, so that a kill breaks
	// its connection.
	throughFront(t, front, e, "both servers up", 0)
	clients := make([]kubernetes.Interface, 2)
	for i := range clients {
		c, err := kubernetes.NewForConfig(e.APIServerConfig(i))
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}

	// One etcd: what server 1 stores, server 2 reads.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "failover", Namespace: "default"}, Data: map[string]string{"v": "1"}}
	created, err := clients[0].CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating through server 1: %v", err)
	}
	got, err := clients[1].CoreV1().ConfigMaps("default").Get(ctx, "failover", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading through server 2: %v", err)
	}
	if got.UID != created.UID || got.Data["v"] != "1" {
		t.Fatalf("server 2 read %s %v; want %s with v=1", got.UID, got.Data, created.UID)
	}

	// Server 1 dies: its port refuses, server 2 still serves.
	first := testenv.APIServerName(0)
	if first != testenv.KubeAPIServer || testenv.APIServerName(1) != "kube-apiserver-2" {
		t.Fatalf("APIServerName: %q, %q", first, testenv.APIServerName(1))
	}
	if err := e.Kill(first); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(e.URLs[0], "https://")
	if conn, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
		conn.Close()
		t.Fatalf("server 1 killed, yet %s accepts connections", addr)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("server 1 killed: dialling %s: %v; want connection refused", addr, err)
	}
	if _, err := clients[0].CoreV1().ConfigMaps("default").Get(ctx, "failover", metav1.GetOptions{}); err == nil {
		t.Fatal("server 1 killed, yet its client still reads")
	}
	throughFront(t, front, e, "server 1 killed", 1)
	got, err = clients[1].CoreV1().ConfigMaps("default").Get(ctx, "failover", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("server 1 killed: reading through server 2: %v", err)
	}
	got.Data["v"] = "2"
	updated, err := clients[1].CoreV1().ConfigMaps("default").Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("server 1 killed: writing through server 2: %v", err)
	}

	// Server 1 comes back on its port, with the write made meanwhile.
	began := time.Now()
	if _, err := e.Restart(ctx, first); err != nil {
		t.Fatal(err)
	}
	t.Logf("server 1 restarted and ready in %s", time.Since(began).Round(time.Millisecond))
	back, err := clients[0].CoreV1().ConfigMaps("default").Get(ctx, "failover", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("server 1 restarted: reading: %v", err)
	}
	if back.Data["v"] != "2" || back.ResourceVersion != updated.ResourceVersion {
		t.Fatalf("server 1 restarted: read v=%s at %s; want v=2 at %s", back.Data["v"], back.ResourceVersion, updated.ResourceVersion)
	}
	if resourceVersion(t, back.ResourceVersion) <= resourceVersion(t, created.ResourceVersion) {
		t.Errorf("resource version %s after the write through server 2, %s at creation: want newer", back.ResourceVersion, created.ResourceVersion)
	}
	// A write through server 2 now shows on server 1 at a newer version.
	back.Data["v"] = "3"
	again, err := clients[1].CoreV1().ConfigMaps("default").Update(ctx, back, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("server 1 restarted: writing through server 2: %v", err)
	}
	back, err = clients[0].CoreV1().ConfigMaps("default").Get(ctx, "failover", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("server 1 restarted: reading after a write through server 2: %v", err)
	}
	if back.Data["v"] != "3" || back.ResourceVersion != again.ResourceVersion || resourceVersion(t, back.ResourceVersion) <= resourceVersion(t, updated.ResourceVersion) {
		t.Fatalf("server 1 restarted: after a write through server 2 (at %s) it reads v=%s at %s; want v=3 at a version newer than %s",
			again.ResourceVersion, back.Data["v"], back.ResourceVersion, updated.ResourceVersion)
	}

	// Server 2 is as killable and restartable by its name.
	if err := e.Kill(testenv.APIServerName(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[0].CoreV1().ConfigMaps("default").Get(ctx, "failover", metav1.GetOptions{}); err != nil {
		t.Fatalf("server 2 killed: reading through server 1: %v", err)
	}
	throughFront(t, front, e, "server 1 restarted, server 2 killed", 2)
	if _, err := e.Restart(ctx, testenv.APIServerName(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[1].CoreV1().ConfigMaps("default").Get(ctx, "failover", metav1.GetOptions{}); err != nil {
		t.Fatalf("server 2 restarted: reading: %v", err)
	}
	if err := e.Kill("kube-apiserver-3"); err == nil {
		t.Error("Kill of a third API server that does not exist succeeded")
	}
}

// frontDeadline is how soon after a kill a client of the front must work
// again: its broken connection is redialled through the front to the live
// server at once.
const frontDeadline = 3 * time.Second

// throughFront checks that client, of the front, lists pods and creates a
// ConfigMap within frontDeadline, and that the scheduler and kwok, which
// also reach the API through the front, schedule and run a new pod.
func throughFront(t *testing.T, client kubernetes.Interface, e *testenv.Env, when string, step int) {
	t.Helper()
	ctx := t.Context()
	began := time.Now()
	var last error
	for {
		_, last = client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if last == nil {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("front-%d", step), Namespace: "default"}}
			_, last = client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		}
		if last == nil {
			break
		}
		if time.Since(began) > frontDeadline {
			t.Fatalf("%s: the front's client still fails after %s: %v", when, frontDeadline, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s: the front's client listed pods and created a ConfigMap in %s", when, time.Since(began).Round(time.Millisecond))

	began = time.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("front-%d", step), Namespace: "default"},
		Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{testenv.KwokToleration},
			Containers:  []corev1.Container{{Name: "c", Image: "none"}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s: creating pod %s: %v", when, pod.Name, err)
	}
	deadline := began.Add(30 * time.Second)
	for {
		p, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("on node %q in phase %s", p.Spec.NodeName, p.Status.Phase)
			}
			t.Fatalf("%s: pod %s not scheduled and running by the scheduler and kwok (through the front) in 30s: %v", when, pod.Name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s: the scheduler and kwok ran pod %s in %s", when, pod.Name, time.Since(began).Round(time.Millisecond))
}

func kubeconfigHost(t *testing.T, path string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	return cfg.Host
}

func resourceVersion(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resource version %q: %v", rv, err)
	}
	return n
}
