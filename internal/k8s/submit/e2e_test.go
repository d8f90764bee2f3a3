//go:build integration

package submit_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/testenv"
	"github.com/drover-project/drover/internal/testenv/procnode"
)

// cluster is the control plane this package's end-to-end tests share: the
// controller manager garbage-collects what a killed driver owned, the
// process node runs the driver and executors as processes, and the API
// server's audit log counts the drivers' pod creates (the chaos tests).
var cluster = &testenv.Shared{Options: testenv.Options{Scheduler: true, ControllerManager: true, ProcessNodes: 1,
	AuditPodCreates: true}}

// helperEnv makes this test binary, run as a driver pod's command, wait
// for SIGTERM instead of running tests: a driver that runs until killed.
const helperEnv = "DROVER_SUBMIT_TEST_HELPER"

// init makes this test binary also a driver pod's command that runs until
// killed (helperEnv=sleep) or serves the UI (serve-ui), and stops the shared
// control plane after the tests (TestMain, main_test.go).
func init() {
	binaryModes = append(binaryModes, func() (bool, int) {
		switch os.Getenv(helperEnv) {
		case "sleep":
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			fmt.Println("sleeping until killed")
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Minute):
			}
			return true, 0
		case "serve-ui":
			return true, serveUIHelper()
		}
		return false, 0
	})
	afterTests = append(afterTests, func() error {
		if err := cluster.Stop(); err != nil {
			return fmt.Errorf("stopping the shared control plane: %w", err)
		}
		return nil
	})
}

// restrictedNamespace is a namespace for t that enforces the restricted
// Pod Security profile, with the driver's service account from
// drover rbac (with rbacFlags, such as --authenticate) applied, and the
// policy that confines its drivers to their applications.
func restrictedNamespace(t testing.TB, env *testenv.Env, rbacFlags ...string) string {
	t.Helper()
	ns := env.NewNamespace(t)
	ctx := t.Context()
	n, err := env.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if _, err := env.Client.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := drover(t, env.Kubeconfig, 30*time.Second, append([]string{"rbac", "--namespace", ns}, rbacFlags...)...)
	if r.code != 0 {
		t.Fatalf("drover rbac: exit %d: %s", r.code, r.stderr)
	}
	for _, doc := range strings.Split(r.stdout, "\n---\n") {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatal(err)
		}
		switch tm.Kind {
		case "ServiceAccount":
			var o corev1.ServiceAccount
			mustUnmarshal(t, doc, &o)
			_, err = env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &o, metav1.CreateOptions{})
		case "Role":
			var o rbacv1.Role
			mustUnmarshal(t, doc, &o)
			_, err = env.Client.RbacV1().Roles(ns).Create(ctx, &o, metav1.CreateOptions{})
		case "RoleBinding":
			var o rbacv1.RoleBinding
			mustUnmarshal(t, doc, &o)
			_, err = env.Client.RbacV1().RoleBindings(ns).Create(ctx, &o, metav1.CreateOptions{})
		case "ValidatingAdmissionPolicy":
			// Cluster-scoped: each test's namespace has its own, which
			// goes with the test.
			var o admissionv1.ValidatingAdmissionPolicy
			mustUnmarshal(t, doc, &o)
			policies := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
			_, err = policies.Create(ctx, &o, metav1.CreateOptions{})
			t.Cleanup(func() { _ = policies.Delete(context.Background(), o.Name, metav1.DeleteOptions{}) })
		case "ValidatingAdmissionPolicyBinding":
			var o admissionv1.ValidatingAdmissionPolicyBinding
			mustUnmarshal(t, doc, &o)
			bindings := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
			_, err = bindings.Create(ctx, &o, metav1.CreateOptions{})
			t.Cleanup(func() { _ = bindings.Delete(context.Background(), o.Name, metav1.DeleteOptions{}) })
		default:
			t.Fatalf("drover rbac printed a %q", tm.Kind)
		}
		if err != nil {
			t.Fatalf("applying the %s of drover rbac: %v", tm.Kind, err)
		}
	}
	return ns
}

func mustUnmarshal(t testing.TB, doc string, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
		t.Fatal(err)
	}
}

// clusterArgs are submit's flags for a cluster-mode application in ns.
func clusterArgs(env *testenv.Env, ns string, extra ...string) []string {
	args := []string{"submit", "--master", "k8s://" + env.URL, "--deploy-mode", "cluster",
		"--conf", "spark.kubernetes.namespace=" + ns,
		"--conf", "spark.kubernetes.container.image=drover-test:latest",
		"--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver",
		"--conf", "spark.kubernetes.node.selector." + procnode.NodeLabel + "=true",
		"--conf", "spark.kubernetes.report.interval=2s",
		"--driver-memory", "256m", "--executor-memory", "256m", "--num-executors", "2",
	}
	return append(args, extra...)
}

var submittedRE = regexp.MustCompile(`submitted ([a-z0-9-]+):([a-z0-9.-]+)`)

func submittedPod(t testing.TB, r result) string {
	t.Helper()
	m := submittedRE.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no submission id in the output:\n%s", r.stderr)
	}
	return m[2]
}

func TestClusterModeWordCount(t *testing.T) {
	env := cluster.Env(t)
	_, wordcount := binaries(t)
	ns := restrictedNamespace(t, env)
	owners := executorOwners(t, env, ns)
	r := drover(t, env.Kubeconfig, 3*time.Minute, clusterArgs(env, ns, "--name", "wordcount", "local://"+wordcount, wordInput(t), "3")...)
	t.Logf("drover submit:\n%s", r.stderr)
	if r.code != 0 {
		t.Fatalf("exit code %d, want 0", r.code)
	}
	pod := submittedPod(t, r)
	for _, want := range []string{"Running on procnode-", "succeeded"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("submit's output lacks %q", want)
		}
	}
	// The config map exists before the pod that mounts it, so the driver
	// never waits for it (which would show as a failure).
	if strings.Contains(r.stderr, "CreateContainerConfigError") {
		t.Errorf("the driver pod waited for its configuration:\n%s", r.stderr)
	}
	logs, err := env.ProcessNode.Logs(ns, pod)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the\t400\n", "brown\t200\n", "dog\t200\n"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("the driver's output lacks %q:\n%s", want, logs)
		}
	}
	// The executors ran as pods owned by the driver pod.
	p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The executors' pods are owned by the driver pod, whose UID the driver
	// takes from the downward API (TestGetDriverPod).
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	if diff := cmp.Diff(want, <-owners); diff != "" {
		t.Errorf("an executor pod's owners (-want +got):\n%s", diff)
	}
	if p.Spec.ServiceAccountName != "drover-driver" {
		t.Errorf("driver service account %q", p.Spec.ServiceAccountName)
	}
	if !strings.Contains(string(logs), "application started") {
		t.Errorf("the driver did not start its executors:\n%s", logs)
	}
	// The driver cleaned up after its executors before it exited, without
	// garbage collection (its pod remains): their pods are deleted (they
	// may still be in their grace period), their ConfigMap and Secret gone.
	left := appObjects(t, env, ns, "spark-role=executor,spark-app-selector="+p.Labels["spark-app-selector"])
	var undeleted []string
	for _, obj := range left {
		if name, ok := strings.CutPrefix(obj, "pod/"); ok {
			ep, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err == nil && ep.DeletionTimestamp != nil || apierrors.IsNotFound(err) {
				continue
			}
		}
		if !strings.HasPrefix(obj, "service/") {
			undeleted = append(undeleted, obj)
		}
	}
	if len(undeleted) > 0 {
		t.Errorf("the driver exited leaving executor objects: %v", undeleted)
	}
}

// executorOwners sends the owner references of the first executor pod
// created in ns.
func executorOwners(t *testing.T, env *testenv.Env, ns string) <-chan []metav1.OwnerReference {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	w, err := env.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	out := make(chan []metav1.OwnerReference, 1)
	go func() {
		defer cancel()
		defer w.Stop()
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				out <- p.OwnerReferences
				return
			}
		}
		out <- nil
	}()
	return out
}

func TestClusterModeFailure(t *testing.T) {
	env := cluster.Env(t)
	_, wordcount := binaries(t)
	ns := restrictedNamespace(t, env)
	// wordcount without its file argument fails with its usage.
	r := drover(t, env.Kubeconfig, 3*time.Minute, clusterArgs(env, ns, "--num-executors", "1", "local://"+wordcount)...)
	t.Logf("drover submit:\n%s", r.stderr)
	if r.code == 0 {
		t.Fatal("exit code 0 for a failing application")
	}
	for _, want := range []string{"failed: the driver exited with code 1", "usage: wordcount <file"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("submit's output lacks %q", want)
		}
	}
}

func TestClusterModePanic(t *testing.T) {
	env := cluster.Env(t)
	binaries(t)
	ns := restrictedNamespace(t, env)
	r := drover(t, env.Kubeconfig, 3*time.Minute, clusterArgs(env, ns, "--num-executors", "1", "local://"+filepath.Join(binDir, "panicapp"))...)
	t.Logf("drover submit:\n%s", r.stderr)
	if r.code == 0 {
		t.Fatal("exit code 0 for an application that panicked")
	}
	if !strings.Contains(r.stderr, "panicapp: the job cannot go on") {
		t.Error("submit's output does not show the panic's message")
	}
}

func TestStatusAndKill(t *testing.T) {
	env := cluster.Env(t)
	ns := restrictedNamespace(t, env)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	for range 2 {
		r := drover(t, env.Kubeconfig, time.Minute, clusterArgs(env, ns, "--name", "sleeper",
			"--conf", "spark.kubernetes.submission.waitAppCompletion=false",
			"--conf", "spark.kubernetes.driverEnv."+helperEnv+"=sleep",
			"local://"+self)...)
		if r.code != 0 {
			t.Fatalf("submit: exit %d:\n%s", r.code, r.stderr)
		}
		if id := strings.TrimSpace(r.stdout); id != ns+":"+submittedPod(t, r) {
			t.Errorf("submit printed %q, want the submission id", id)
		}
		pods = append(pods, submittedPod(t, r))
	}
	waitFor(t, "both drivers running", func() bool {
		r := drover(t, env.Kubeconfig, 30*time.Second, "status", ns+":sleeper-*")
		return r.code == 0 && strings.Count(r.stdout, "Running on procnode-") == 2
	})
	r := drover(t, env.Kubeconfig, 30*time.Second, "status", ns+":sleeper-*")
	t.Logf("drover status %s:sleeper-*:\n%s", ns, r.stdout)
	r = drover(t, env.Kubeconfig, 30*time.Second, "status", ns+":"+pods[0])
	if r.code != 0 || !strings.HasPrefix(r.stdout, ns+":"+pods[0]+"\t") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("status of %s: exit %d, %q %s", pods[0], r.code, r.stdout, r.stderr)
	}
	r = drover(t, env.Kubeconfig, 30*time.Second, "submit", "--status", ns+":nothing-like-this-*")
	if r.code == 0 || !strings.Contains(r.stderr, "no driver pod and no application id matches nothing-like-this-*") {
		t.Errorf("status of no match: exit %d, %s", r.code, r.stderr)
	}

	grace := "--conf=spark.kubernetes.appKillPodDeletionGracePeriod=2s"
	r = drover(t, env.Kubeconfig, 30*time.Second, "kill", grace, ns+":"+pods[0])
	if r.code != 0 || r.stdout != "killed "+ns+":"+pods[0]+"\n" {
		t.Errorf("kill %s: exit %d, %q %s", pods[0], r.code, r.stdout, r.stderr)
	}
	r = drover(t, env.Kubeconfig, 30*time.Second, "submit", "--kill", ns+":sleeper-*", grace)
	if r.code != 0 || !strings.Contains(r.stdout, "killed "+ns+":"+pods[1]) {
		t.Errorf("kill sleeper-*: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
	// Everything of both applications goes: the driver pods, and by
	// garbage collection their executors, services and config maps.
	start := time.Now()
	waitFor(t, "nothing of the applications left", func() bool { return len(leftovers(t, env, ns)) == 0 })
	t.Logf("pods, services and config maps gone %s after the kill", time.Since(start).Round(time.Millisecond))
}

// leftovers lists the application objects in ns.
func leftovers(t *testing.T, env *testenv.Env, ns string) []string {
	return appObjects(t, env, ns, "spark-app-selector")
}

// appObjects lists the pods, config maps and secrets in ns that selector
// (a label selector; empty for all) matches, and every service, as
// kind/name, sorted. The API server's kube-root-ca.crt is nobody's.
func appObjects(t *testing.T, env *testenv.Env, ns, selector string) []string {
	t.Helper()
	ctx := t.Context()
	sel := metav1.ListOptions{LabelSelector: selector}
	var out []string
	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		out = append(out, "pod/"+p.Name)
	}
	cms, err := env.Client.CoreV1().ConfigMaps(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cms.Items {
		if c.Name != "kube-root-ca.crt" {
			out = append(out, "configmap/"+c.Name)
		}
	}
	secrets, err := env.Client.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		out = append(out, "secret/"+s.Name)
	}
	svcs, err := env.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		out = append(out, "service/"+s.Name)
	}
	slices.Sort(out)
	return out
}

// poll calls ok every interval until it holds or timeout passed, and
// reports whether it held: for what the control plane, its controllers and
// the drivers' and executors' processes do, which only real time advances.
func poll(timeout, interval time.Duration, ok func() bool) bool {
	return wait.PollUntilContextTimeout(context.Background(), interval, timeout, true,
		func(context.Context) (bool, error) { return ok(), nil }) == nil
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll(time.Minute, 200*time.Millisecond, cond) {
		t.Fatalf("not %s after a minute", what)
	}
}

func TestBadInput(t *testing.T) {
	env := cluster.Env(t)
	ns := restrictedNamespace(t, env)
	nobody := kubeconfigFor(t, env, ns, "nobody")
	testCases := map[string]struct {
		kubeconfig string
		args       []string
		want       string
	}{
		"unknown flag": {args: []string{"submit", "--executor-memroy", "1g", "local:///app"}, want: "unknown flag: --executor-memroy"},
		"no application": {args: clusterArgs(env, ns),
			want: "no application: expected drover submit [flags] <application>"},
		"malformed conf": {args: clusterArgs(env, ns, "--conf", "spark.executor.cores", "local:///app"),
			want: `--conf "spark.executor.cores": expected key=value`},
		"invalid memory": {args: clusterArgs(env, ns, "--executor-memory", "2 gigs", "local:///app"),
			want: `invalid value "2 gigs" for spark.executor.memory: expected a size such as 512m or 4g`},
		"missing namespace": {args: clusterArgs(env, "no-such-namespace", "local:///app"),
			want: "namespace no-such-namespace does not exist (spark.kubernetes.namespace)"},
		"unreachable API server": {args: withMaster(clusterArgs(env, ns, "local:///app"), "k8s://https://127.0.0.1:1"),
			want: "cannot reach the Kubernetes API server (check --master or the kubeconfig)"},
		"forbidden": {kubeconfig: nobody, args: clusterArgs(env, ns, "local:///app"),
			want: "is forbidden"},
		"relative application": {args: clusterArgs(env, ns, "app"),
			want: `application resource "app": expected local:///path/in/the/image`},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			kc := tc.kubeconfig
			if kc == "" {
				kc = env.Kubeconfig
			}
			r := drover(t, kc, 30*time.Second, tc.args...)
			if r.code == 0 {
				t.Fatalf("exit code 0; stderr:\n%s", r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, r.stderr)
			}
			if n := strings.Count(r.stderr, "Error:"); n != 1 {
				t.Errorf("%d errors printed, want one:\n%s", n, r.stderr)
			}
			if left := leftovers(t, env, ns); len(left) > 0 {
				t.Errorf("created %v", left)
			}
		})
	}
}

// withMaster replaces the --master flag's value in args.
func withMaster(args []string, m string) []string {
	for i := range args[:len(args)-1] {
		if args[i] == "--master" {
			args[i+1] = m
		}
	}
	return args
}

// kubeconfigFor writes a kubeconfig for a new service account without
// any rights.
func kubeconfigFor(t *testing.T, env *testenv.Env, ns, name string) string {
	t.Helper()
	ctx := t.Context()
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: env.URL, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name, Namespace: ns}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The executor pod template is read by submit on this machine and
// uploaded: the driver, in its pod, builds its executors from it.
func TestClusterModeExecutorTemplate(t *testing.T) {
	env := cluster.Env(t)
	_, wordcount := binaries(t)
	ns := restrictedNamespace(t, env)
	tmpl := filepath.Join(t.TempDir(), "executor.yaml")
	// A sidecar without a securityContext: drover fills in what the
	// namespace's restricted Pod Security profile requires.
	template := `apiVersion: v1
kind: Pod
metadata:
  labels:
    team: data
spec:
  containers:
  - name: executor
  - name: sidecar
    image: busybox
    command: [/bin/sleep, "120"]
`
	if err := os.WriteFile(tmpl, []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := env.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=executor"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r := drover(t, env.Kubeconfig, 3*time.Minute, clusterArgs(env, ns, "--conf", "spark.kubernetes.executor.podTemplateFile="+tmpl,
		"local://"+wordcount, wordInput(t), "3")...)
	if r.code != 0 {
		t.Fatalf("exit code %d:\n%s", r.code, r.stderr)
	}
	labelled, seen := 0, 0
	for done := false; !done; {
		select {
		case ev := <-w.ResultChan():
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == "ADDED" {
				seen++
				if p.Labels["team"] == "data" {
					labelled++
				}
			}
		case <-time.After(time.Second):
			done = true
		}
	}
	if seen == 0 || labelled != seen {
		t.Errorf("%d of %d executor pods carry the template's label", labelled, seen)
	}
	// The driver read the uploaded copy, not the submitter's file.
	cms, err := env.Client.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=driver"})
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("driver config maps: %v, %v", cms, err)
	}
	data := cms.Items[0].Data
	if !strings.Contains(data["executor-pod-template.yaml"], "team: data") ||
		!strings.Contains(data["spark-defaults.conf"], "spark.kubernetes.executor.podTemplateFile=/opt/drover/conf/executor-pod-template.yaml") {
		t.Errorf("the driver's config map does not carry the template and its path:\n%v", data)
	}
}

// TestChaosClientModeDriverKilled SIGKILLs a client-mode driver on the real
// control plane: its executors end by themselves, status reports the
// driver gone (and exits 1), and kill removes the executor pods and the
// config map, leaving nothing labelled with the application id.
func TestChaosClientModeDriverKilled(t *testing.T) {
	env := cluster.Env(t)
	binaries(t)
	ns := restrictedNamespace(t, env)
	var out logtest.Buffer
	driver := exec.Command(filepath.Join(binDir, "sleepapp"), "--master", "k8s://"+env.URL,
		"--conf", "spark.kubernetes.namespace="+ns,
		"--conf", "spark.kubernetes.container.image=drover-test:latest",
		"--conf", "spark.kubernetes.node.selector."+procnode.NodeLabel+"=true",
		"--conf", "spark.driver.host=127.0.0.1",
		"--conf", "spark.executor.instances=2", "--conf", "spark.executor.memory=256m",
		"--conf", "spark.network.timeout=10s", "--conf", "spark.executor.heartbeatInterval=2s",
		"--conf", "spark.ui.showConsoleProgress=false")
	driver.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	driver.Stdout, driver.Stderr = &out, &out
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			driver.Process.Kill()
			driver.Wait()
		}
	})
	executors := func() []corev1.Pod {
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=executor"})
		if err != nil {
			t.Fatal(err)
		}
		return pods.Items
	}
	countPhase := func(pods []corev1.Pod, phases ...corev1.PodPhase) int {
		n := 0
		for _, p := range pods {
			if slices.Contains(phases, p.Status.Phase) {
				n++
			}
		}
		return n
	}
	waitFor(t, "two executors running", func() bool { return countPhase(executors(), corev1.PodRunning) == 2 })
	appID := executors()[0].Labels["spark-app-selector"]
	if !regexp.MustCompile(`^drover-[0-9a-f]{16}$`).MatchString(appID) {
		t.Fatalf("application id %q, want drover-<16 hex digits>", appID)
	}
	name := ns + ":" + appID

	r := drover(t, env.Kubeconfig, 30*time.Second, "status", name)
	t.Logf("drover status %s while the driver runs: exit %d\n%s", name, r.code, r.stdout)
	if r.code != 0 || !strings.HasPrefix(r.stdout, name+"\tclient mode\trunning: 2 executors\t") {
		t.Errorf("status of a running client-mode application: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}

	if err := driver.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	driver.Wait()
	killed = true
	// The executors see the driver's connections close and exit.
	waitFor(t, "the executors ended", func() bool {
		pods := executors()
		return len(pods) == 2 && countPhase(pods, corev1.PodFailed, corev1.PodSucceeded) == 2
	})
	start := time.Now()
	if !poll(submit.DriverGoneAfter+time.Minute, 2*time.Second, func() bool {
		r = drover(t, env.Kubeconfig, 30*time.Second, "status", ns+":*")
		return strings.Contains(r.stdout, name+"\tclient mode\tdriver gone\t")
	}) {
		t.Fatalf("status does not report the driver gone %s after its executors ended: exit %d\n%s%s",
			time.Since(start).Round(time.Second), r.code, r.stdout, r.stderr)
	}
	t.Logf("drover status %s:* %s after the executors ended: exit %d\n%s%s", ns, time.Since(start).Round(time.Second), r.code, r.stdout, r.stderr)
	wantLine := name + "\tclient mode\tdriver gone\tleft: 2 executor pods (2 ended), configmap " + podspec.ConfigMapName(appID) + "\n"
	if r.code != 1 || r.stdout != wantLine || !strings.Contains(r.stderr, "1 of 1 applications failed or lost their driver: "+name) {
		t.Errorf("status: exit %d, stdout %q (want %q), stderr %s", r.code, r.stdout, wantLine, r.stderr)
	}

	r = drover(t, env.Kubeconfig, 30*time.Second, "kill", name)
	t.Logf("drover kill %s: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
	want := "killed " + name + " (client mode): removed 2 executor pods, configmap " + podspec.ConfigMapName(appID) +
		", secret " + podspec.AuthSecretName(appID) + "\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("kill: exit %d, stdout %q, want %q; stderr %s", r.code, r.stdout, want, r.stderr)
	}
	// Nothing labelled with the application id remains.
	sel := metav1.ListOptions{LabelSelector: "spark-app-selector=" + appID}
	waitFor(t, "nothing of the application left", func() bool {
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), sel)
		if err != nil {
			t.Fatal(err)
		}
		cms, err := env.Client.CoreV1().ConfigMaps(ns).List(t.Context(), sel)
		if err != nil {
			t.Fatal(err)
		}
		secrets, err := env.Client.CoreV1().Secrets(ns).List(t.Context(), sel)
		if err != nil {
			t.Fatal(err)
		}
		return len(pods.Items)+len(cms.Items)+len(secrets.Items) == 0
	})
	r = drover(t, env.Kubeconfig, 30*time.Second, "status", name)
	if r.code != 1 || !strings.Contains(r.stderr, "no driver pod and no application id "+appID) {
		t.Errorf("status after kill: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
	if t.Failed() {
		t.Logf("driver output:\n%s", out.String())
	}
}
