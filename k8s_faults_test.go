//go:build integration

package drover

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/testenv"
)

// Faults of executor pods on a real control plane with a process node. Each
// driver run is bounded: a run that hangs fails the test instead of
// waiting for the test binary's timeout.

// runDriverWithin runs a driver and fails t if it does not end within
// timeout.
func runDriverWithin(t *testing.T, timeout time.Duration, args []string, run func(*Context) error) (int, string) {
	t.Helper()
	var stderr logtest.Buffer
	done := make(chan int, 1)
	start := time.Now()
	go func() { done <- runDriver(args, &stderr, run) }()
	select {
	case code := <-done:
		t.Logf("the driver ran %s", time.Since(start).Round(time.Millisecond))
		return code, stderr.String()
	case <-time.After(timeout):
		t.Fatalf("the driver did not end within %s; stderr so far:\n%s", timeout, stderr.String())
		return 0, ""
	}
}

// driverError is the driver's final error: the one "drover: …" line.
func driverError(t *testing.T, stderr string) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "drover: ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("want one final error line, got %d; stderr:\n%s", len(lines), stderr)
	}
	return lines[0]
}

// failedOnce checks that the application's failure, cause, was logged once
// and ended the driver once, with no noise from the shutdown that follows.
func failedOnce(t *testing.T, stderr, cause string) {
	t.Helper()
	if n := strings.Count(stderr, "application failing"); n != 1 {
		t.Errorf("the application failed %d times, want once; stderr:\n%s", n, stderr)
	}
	if n := strings.Count(stderr, cause); n != 2 {
		t.Errorf("%q appears %d times, want twice (the failure's log line and the driver's error); stderr:\n%s", cause, n, stderr)
	}
	if strings.Contains(stderr, "deleting executor pod failed") {
		t.Errorf("the shutdown after the failure logged failed pod deletions; stderr:\n%s", stderr)
	}
}

// waitNoExecutorPods waits until the application's executor pods are gone.
func waitNoExecutorPods(t *testing.T, env *testenv.Env, ns string) {
	t.Helper()
	var pods []corev1.Pod
	var cms []string
	if !pollUntil(60*time.Second, 200*time.Millisecond, func() bool {
		pods, cms = appObjects(t, env, ns)
		return len(pods)+len(cms) == 0
	}) {
		t.Fatalf("%d executor pods and config maps %v remain 60s after the application ended", len(pods), cms)
	}
}

// execPodName matches the executor pod names the errors must quote.
var execPodName = regexp.MustCompile(`pod [a-z0-9-]+-exec-\d+`)

// TestKubernetesExecutorPodsCannotStart: pods that wait forever (an image
// that cannot be pulled, a Secret that does not exist) fail the application
// after drover.kubernetes.executor.startTimeout with one error that names a
// pod, the kubelet's reason and its message.
func TestKubernetesExecutorPodsCannotStart(t *testing.T) {
	env := cluster.Env(t)
	tests := map[string]struct {
		conf    []string
		reason  string // regexp
		message string
	}{
		"image cannot be pulled": {
			conf:    []string{"spark.kubernetes.container.image=registry.invalid/drover:missing"},
			reason:  `ErrImagePull|ImagePullBackOff`,
			message: "registry.invalid/drover:missing",
		},
		"missing secret": {
			conf:    []string{"spark.kubernetes.executor.secretKeyRef.TOKEN=no-such-secret:token"},
			reason:  `CreateContainerConfigError`,
			message: `secret "no-such-secret" not found`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.NewNamespace(t)
			t.Setenv("KUBECONFIG", env.Kubeconfig)
			ran := false
			conf := append([]string{"spark.executor.instances=2", "drover.kubernetes.executor.startTimeout=10s"}, tc.conf...)
			code, stderr := runDriverWithin(t, 2*time.Minute, k8sArgs(env, ns, conf...),
				func(*Context) error { ran = true; return nil })
			if code == 0 || ran {
				t.Fatalf("exit code %d, job ran %v: want a failed application; stderr:\n%s", code, ran, stderr)
			}
			msg := driverError(t, stderr)
			if !strings.Contains(msg, "no executor could start") || !strings.Contains(msg, tc.message) {
				t.Errorf("the error does not say that no executor could start, and %q: %s", tc.message, msg)
			}
			if !execPodName.MatchString(msg) || !regexp.MustCompile(tc.reason).MatchString(msg) {
				t.Errorf("the error names no executor pod or no %s: %s", tc.reason, msg)
			}
			failedOnce(t, stderr, "no executor could start")
			// Each pod's problem is reported once (pods seen together
			// share one warning), not at every check.
			if n := strings.Count(stderr, "the pod will be deleted if this lasts"); n < 1 || n > 2 {
				t.Errorf("%d warnings about the pods that cannot start, want one per pod at most; stderr:\n%s", n, stderr)
			}
			waitNoExecutorPods(t, env, ns)
		})
	}
}

func TestKubernetesCommandCannotStart(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	// The process node cannot start a command whose working directory does
	// not exist: StartError, exit code 128, as a runtime reports it.
	tmpl := t.TempDir() + "/template.yaml"
	if err := os.WriteFile(tmpl, []byte("apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: executor\n"+
		"    workingDir: /nonexistent/drover-fault-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	ran := false
	code, stderr := runDriverWithin(t, 2*time.Minute, k8sArgs(env, ns, "spark.executor.instances=2",
		"spark.kubernetes.executor.podTemplateFile="+tmpl, "drover.kubernetes.executor.startTimeout=10s"),
		func(*Context) error { ran = true; return nil })
	if code == 0 || ran {
		t.Fatalf("exit code %d, job ran %v: want a failed application; stderr:\n%s", code, ran, stderr)
	}
	msg := driverError(t, stderr)
	for _, want := range []string{"could not start", "/nonexistent/drover-fault-test"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if !execPodName.MatchString(msg) {
		t.Errorf("the error names no executor pod: %s", msg)
	}
	// The pods fail at once and are replaced until
	// spark.executor.maxNumFailures (4 with two executors) or the start
	// timeout ends the application, whichever comes first.
	cause := "exceeded spark.executor.maxNumFailures"
	if strings.Contains(msg, "no executor could start") {
		cause = "no executor could start"
	}
	failedOnce(t, stderr, cause)
	waitNoExecutorPods(t, env, ns)
}

func TestKubernetesResourceQuota(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	ctx := t.Context()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}},
	}
	if _, err := env.Client.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The quota controller fills in the status the admission checks.
	var err error
	if !pollUntil(30*time.Second, 100*time.Millisecond, func() bool {
		var q *corev1.ResourceQuota
		q, err = env.Client.CoreV1().ResourceQuotas(ns).Get(ctx, quota.Name, metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil
	}) {
		t.Fatalf("the quota controller did not process the quota within 30s (err %v)", err)
	}

	inputs := make([]int, 16)
	for i := range inputs {
		inputs[i] = i + 1
	}
	var got []int
	var during []corev1.Pod
	// The default wait for registrations (30 s) stays: the driver must stop
	// waiting for executors it knows the quota holds back.
	start := time.Now()
	code, stderr := runDriverWithin(t, 2*time.Minute, k8sArgs(env, ns, "spark.executor.instances=4", "drover.log.level=info"),
		func(c *Context) error {
			var err error
			// 16 tasks of 300 ms on 2 executors: several allocation
			// rounds pass while the quota holds.
			got, err = RunPartitions(c, slowSquare, inputs)
			during, _ = appObjects(t, env, ns)
			return err
		})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
	}
	if len(got) != len(inputs) {
		t.Fatalf("results %v", got)
	}
	for i, v := range got {
		if v != (i+1)*(i+1) {
			t.Fatalf("results %v", got)
		}
	}
	if len(during) != 2 {
		t.Errorf("%d executor pods during the job, want the 2 the quota admits", len(during))
	}
	if n := strings.Count(stderr, "exceeded quota"); n != 1 {
		t.Errorf("the quota error was reported %d times, want once; stderr:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "continuing with 2 of 4 executors") {
		t.Errorf("the report does not say the application goes on with 2 of 4 executors; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr, "starting without all executors: the cluster manager cannot create more for now") ||
		!strings.Contains(stderr, `by="ResourceQuota pods"`) {
		t.Errorf("the driver does not say the quota holds executors back and start without them; stderr:\n%s", stderr)
	}
	t.Logf("the application took %s with the quota", time.Since(start).Round(time.Millisecond))
	waitNoExecutorPods(t, env, ns)
	checkCreates(t, env, ns, 2, 0)
}
