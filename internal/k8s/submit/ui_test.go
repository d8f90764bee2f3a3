package submit_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/testenv/browser"
)

// serveUIHelper is a driver pod's command in TestUIPortForward: it serves
// on its pod IP and the spark-ui port, as a driver's web UI does, until
// SIGTERM.
func serveUIHelper() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", net.JoinHostPort(os.Getenv(envvar.DriverPodIP), "4040"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "web UI of %s: %s", os.Getenv(envvar.DriverPodName), r.URL.Path)
	})}
	go srv.Serve(ln)
	fmt.Println("serving on", ln.Addr())
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Minute):
	}
	srv.Close()
	return 0
}

// TestUIPortForward forwards a local port to a cluster-mode driver pod's
// spark-ui port through the API server and the process node's kubelet
// endpoint, in-process and with drover ui.
func TestUIPortForward(t *testing.T) {
	env := cluster.Env(t)
	ns := restrictedNamespace(t, env)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := drover(t, env.Kubeconfig, time.Minute, clusterArgs(env, ns, "--name", "uiserver",
		"--conf", "spark.kubernetes.submission.waitAppCompletion=false",
		"--conf", "spark.kubernetes.driverEnv."+helperEnv+"=serve-ui",
		"local://"+self)...)
	if r.code != 0 {
		t.Fatalf("submit: exit %d:\n%s", r.code, r.stderr)
	}
	pod := submittedPod(t, r)
	svc := waitForService(t, env.Client, ns)
	if !hasPort(svc.Spec.Ports, podspec.UIPortName, 4040) {
		t.Errorf("the driver's Service ports %+v have no spark-ui 4040", svc.Spec.Ports)
	}
	waitFor(t, "the driver serving", func() bool {
		logs, _ := cluster.Env(t).ProcessNode.Logs(ns, pod)
		return strings.Contains(string(logs), "serving on")
	})

	t.Run("ForwardUI", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		urls := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- submit.ForwardUI(ctx, env.Config, env.Client, submit.ID{Namespace: ns, Name: pod}, submit.UIOptions{Ready: func(u string) { urls <- u }}, io.Discard)
		}()
		var url string
		select {
		case url = <-urls:
		case err := <-done:
			t.Fatalf("ForwardUI: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("ForwardUI not ready within 30s")
		}
		for _, path := range []string{"/jobs/", "/executors/"} {
			if body := httpGet(t, url+path); body != "web UI of "+pod+": "+path {
				t.Errorf("GET %s through the port-forward = %q", path, body)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ForwardUI after cancel: %v", err)
		}
	})

	t.Run("drover ui", func(t *testing.T) {
		bin, _ := binaries(t)
		cmd := exec.CommandContext(t.Context(), bin, "ui", ns+":"+pod)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		prefix := "Spark UI of " + ns + ":" + pod + " at "
		if err != nil || !strings.HasPrefix(line, prefix) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("drover ui printed %q (%v); stderr:\n%s", line, err, stderr.String())
		}
		url, _, _ := strings.Cut(strings.TrimPrefix(line, prefix), " ")
		if body := httpGet(t, url+"/stages/"); body != "web UI of "+pod+": /stages/" {
			t.Errorf("GET /stages/ through drover ui = %q", body)
		}
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("drover ui after Ctrl-C: %v; stderr:\n%s", err, stderr.String())
		}
	})
}

func hasPort(ports []corev1.ServicePort, name string, port int32) bool {
	for _, p := range ports {
		if p.Name == name && p.Port == port && p.TargetPort.IntValue() == int(port) {
			return true
		}
	}
	return false
}

// waitForService returns the one Service in ns once it exists.
func waitForService(t *testing.T, cs kubernetes.Interface, ns string) *corev1.Service {
	t.Helper()
	var svc *corev1.Service
	waitFor(t, "the driver's Service", func() bool {
		l, err := cs.CoreV1().Services(ns).List(t.Context(), metav1.ListOptions{})
		if err == nil && len(l.Items) == 1 {
			svc = &l.Items[0]
		}
		return svc != nil
	})
	return svc
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}

// TestUIOfAClusterModeJobInABrowser submits a cluster-mode application,
// reaches its driver's web UI through a port-forward while its second job
// runs, and has a headless Chromium check every page.
func TestUIOfAClusterModeJobInABrowser(t *testing.T) {
	p := browser.New(t)
	env := cluster.Env(t)
	ns := restrictedNamespace(t, env)
	binaries(t)
	release := filepath.Join(t.TempDir(), "release")
	r := drover(t, env.Kubeconfig, time.Minute, clusterArgs(env, ns, "--name", "uiapp",
		"--conf", "spark.kubernetes.submission.waitAppCompletion=false",
		"local://"+filepath.Join(binDir, "uiapp"), release)...)
	if r.code != 0 {
		t.Fatalf("submit: exit %d:\n%s", r.code, r.stderr)
	}
	pod := submittedPod(t, r)
	defer os.WriteFile(release, nil, 0o644) // whatever happens, the job ends
	waitFor(t, "the driver's web UI", func() bool {
		logs, _ := env.ProcessNode.Logs(ns, pod)
		return strings.Contains(string(logs), "Spark UI available at")
	})

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	urls := make(chan string, 1)
	go submit.ForwardUI(ctx, env.Config, env.Client, submit.ID{Namespace: ns, Name: pod}, submit.UIOptions{Ready: func(u string) { urls <- u }}, io.Discard)
	var url string
	select {
	case url = <-urls:
	case <-time.After(30 * time.Second):
		t.Fatal("no port-forward within 30s")
	}
	waitFor(t, "the second job's tasks running", func() bool {
		resp, err := http.Get(url + "/stages/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "Active Stages (1)") && strings.Contains(string(b), "Completed Stages (1)")
	})

	p.Open(url)
	p.Expect("jobs", "Active Jobs (1)", "Completed Jobs (1)", "4/4", "0/4", "Master: k8s://")
	p.Screenshot("jobs")
	p.Follow("Stages", "/stages/")
	p.Expect("stages", "RunPartitions uiapp.wait", "RunPartitions uiapp.square")
	p.Screenshot("stages")
	p.Follow("Executors", "/executors/")
	p.Expect("executors", "uiapp-", "-exec-1", "-exec-2", "procnode-0", "(pod Running)")
	p.Screenshot("executors")
	p.Follow("Allocation", "/allocation/")
	p.Expect("allocation", "Executor pods", "Nothing holds the allocator back.", "Latest rounds")
	p.Screenshot("allocation")
	p.Follow("Environment", "/environment/")
	p.Expect("environment", "Deploy mode\tcluster", "Driver host\t"+pod, "spark.kubernetes.namespace\t"+ns)
	p.Screenshot("environment")

	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the driver pod succeeded", func() bool {
		got, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodSucceeded
	})
}
