//go:build integration

package submit_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
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
	"github.com/drover-project/drover/internal/ui"
)

// serveUIHelper is a driver pod's command in TestUIPortForward: it serves
// on its pod IP and the spark-ui port, as a driver's web UI does, until
// SIGTERM; like the driver's, it answers only requests that carry the
// application's token from its Secret.
func serveUIHelper() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	secrets, err := os.ReadFile(podspec.LocalConfFile(podspec.DriverSecretFile, os.Getenv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	token := tokenRE.FindStringSubmatch(string(secrets))
	if token == nil {
		fmt.Fprintln(os.Stderr, "no drover.ui.token in the driver's secret")
		return 1
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(os.Getenv(envvar.DriverPodIP), "4040"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token[1] {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
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
		urls := make(chan [2]string, 1)
		done := make(chan error, 1)
		go func() {
			done <- submit.ForwardUI(ctx, env.Config, env.Client, submit.ID{Namespace: ns, Name: pod},
				submit.UIOptions{Ready: func(u, login string) { urls <- [2]string{u, login} }}, io.Discard)
		}()
		var url, login string
		select {
		case u := <-urls:
			url, login = u[0], u[1]
		case err := <-done:
			t.Fatalf("ForwardUI: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("ForwardUI not ready within 30s")
		}
		// The local end admits the browser that opens the login link,
		// once; nobody else.
		if code, _ := get(t, http.DefaultClient, url+"/jobs/"); code != http.StatusUnauthorized {
			t.Errorf("GET /jobs/ through the port-forward without logging in: %d, want 401", code)
		}
		browser := loggedIn(t, login)
		for _, path := range []string{"/jobs/", "/executors/"} {
			if code, body := get(t, browser, url+path); body != "web UI of "+pod+": "+path {
				t.Errorf("GET %s through the port-forward = %d %q", path, code, body)
			}
		}
		if code, _ := get(t, &http.Client{}, login); code != http.StatusUnauthorized {
			t.Errorf("the login link opened a second time: %d, want 401", code)
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
		login, _, _ := strings.Cut(strings.TrimPrefix(line, prefix), " ")
		url, _, _ := strings.Cut(login, ui.LoginPath)
		if code, body := get(t, loggedIn(t, login), url+"/stages/"); body != "web UI of "+pod+": /stages/" {
			t.Errorf("GET /stages/ through drover ui = %d %q", code, body)
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

// tokenRE finds the web UI's token in the driver's secret settings.
var tokenRE = regexp.MustCompile(`(?m)^drover\.ui\.token=(\S+)$`)

// get is a GET of url by client, its status and body.
func get(t *testing.T, client *http.Client, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// loggedIn is a client with a cookie jar that opened login, a link of
// drover ui's local end.
func loggedIn(t *testing.T, login string) *http.Client {
	t.Helper()
	if !strings.Contains(login, ui.LoginPath+"?code=") {
		t.Fatalf("%q is no login link", login)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar}
	if code, body := get(t, c, login); code != http.StatusOK {
		t.Fatalf("opening the login link: %d %s", code, body)
	}
	return c
}

// driverToken is the web UI's token of the driver pod, read where drover
// ui reads it.
func driverToken(t *testing.T, cs kubernetes.Interface, ns, pod string) string {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := p.Annotations[podspec.AnnotationUIToken]
	if name == "" {
		t.Fatalf("driver pod %s has no %s annotation", pod, podspec.AnnotationUIToken)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := tokenRE.FindStringSubmatch(string(sec.Data[podspec.DriverSecretKey]))
	if m == nil {
		t.Fatalf("secret %s holds no drover.ui.token", name)
	}
	return m[1]
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
	urls := make(chan [2]string, 1)
	go submit.ForwardUI(ctx, env.Config, env.Client, submit.ID{Namespace: ns, Name: pod},
		submit.UIOptions{Ready: func(u, login string) { urls <- [2]string{u, login} }}, io.Discard)
	var url, login string
	select {
	case u := <-urls:
		url, login = u[0], u[1]
	case <-time.After(30 * time.Second):
		t.Fatal("no port-forward within 30s")
	}
	// The test's own requests carry the application's token, which the
	// local end admits too; the browser logs in with the link.
	token := driverToken(t, env.Client, ns, pod)
	waitFor(t, "the second job's tasks running", func() bool {
		req, _ := http.NewRequest(http.MethodGet, url+"/stages/", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "Active Stages (1)") && strings.Contains(string(b), "Completed Stages (1)")
	})

	p.Open(login)
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

// TestClusterModeUIRequiresTheToken: a cluster-mode driver's web UI and
// REST API refuse whoever reaches its pod's IP without the application's
// token (here the test, on the pod network of the process node), answer
// with the token from the driver's Secret, and serve drover ui's local
// end (ForwardUI), where a browser logs in with a one-time link; /metrics
// stays open to Prometheus and shows no configuration.
func TestClusterModeUIRequiresTheToken(t *testing.T) {
	env := cluster.Env(t)
	ns := restrictedNamespace(t, env)
	binaries(t)
	const canary, setting = "s3-canary-ui-0077", "setting-canary-0078"
	release := filepath.Join(t.TempDir(), "release")
	r := drover(t, env.Kubeconfig, time.Minute, clusterArgs(env, ns, "--name", "uiapp",
		"--conf", "spark.kubernetes.submission.waitAppCompletion=false",
		"--conf", "spark.hadoop.fs.s3a.secret.key="+canary,
		"--conf", "spark.ui.custom.executor.log.url=http://logs.invalid/"+setting+"/{{EXECUTOR_ID}}",
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
	p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	direct := "http://" + net.JoinHostPort(p.Status.PodIP, "4040")
	token := driverToken(t, env.Client, ns, pod)

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		path, bearer string
		want         int
	}{
		{path: "/jobs/", want: http.StatusUnauthorized},
		{path: "/environment/", want: http.StatusUnauthorized},
		{path: "/api/v1/applications", want: http.StatusUnauthorized},
		{path: "/api/v1/applications", bearer: "a-wrong-token-of-the-right-length-xyz", want: http.StatusUnauthorized},
		{path: "/jobs/", bearer: token, want: http.StatusOK},
		{path: "/api/v1/applications", bearer: token, want: http.StatusOK},
		{path: "/metrics", want: http.StatusOK},
		{path: "/metrics/executors/prometheus", want: http.StatusOK},
	} {
		var header []string
		if tc.bearer != "" {
			header = []string{"Authorization", "Bearer " + tc.bearer}
		}
		code, body := get(t, client, direct+tc.path, header...)
		if code != tc.want {
			t.Errorf("GET %s at the driver pod's IP (bearer %t) = %d, want %d", tc.path, tc.bearer != "", code, tc.want)
		}
		if strings.Contains(body, canary) || strings.Contains(body, token) {
			t.Errorf("GET %s shows a secret", tc.path)
		}
		if strings.HasPrefix(tc.path, "/metrics") && strings.Contains(body, setting) {
			t.Errorf("GET %s shows configuration:\n%s", tc.path, body)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	urls := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- submit.ForwardUI(ctx, env.Config, env.Client, submit.ID{Namespace: ns, Name: pod},
			submit.UIOptions{Ready: func(u, login string) { urls <- [2]string{u, login} }}, io.Discard)
	}()
	var url, login string
	select {
	case u := <-urls:
		url, login = u[0], u[1]
	case err := <-done:
		t.Fatalf("ForwardUI: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("ForwardUI not ready within 30s")
	}
	if code, _ := get(t, http.DefaultClient, url+"/jobs/"); code != http.StatusUnauthorized {
		t.Errorf("drover ui's local end without the login: %d, want 401", code)
	}
	browser := loggedIn(t, login)
	if code, body := get(t, browser, url+"/jobs/"); code != http.StatusOK || !strings.Contains(body, "<title>uiapp - Jobs</title>") {
		t.Errorf("GET /jobs/ through drover ui, logged in = %d:\n%s", code, body)
	}
	if code, body := get(t, browser, url+"/api/v1/applications"); code != http.StatusOK || !strings.Contains(body, `"sparkUser"`) {
		t.Errorf("GET /api/v1/applications through drover ui, logged in = %d:\n%s", code, body)
	}
	if code, _ := get(t, http.DefaultClient, url+"/api/v1/applications", "Authorization", "Bearer "+token); code != http.StatusOK {
		t.Errorf("drover ui's local end with the application's token: %d, want 200", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ForwardUI after cancel: %v", err)
	}
}
