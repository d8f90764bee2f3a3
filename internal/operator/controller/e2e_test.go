//go:build integration

package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
	"github.com/drover-project/drover/internal/operator/controller"
	"github.com/drover-project/drover/internal/testenv"
	"github.com/drover-project/drover/internal/testenv/procnode"
)

// cluster is the control plane the tests share: the process node runs
// real drivers and executors, kwok nodes cheap ones (TestOperatorControllerRestarts),
// the controller manager garbage-collects what a deleted object owned, and
// the audit log counts the operator's pod creates.
var cluster = &testenv.Shared{Options: testenv.Options{Scheduler: true, ControllerManager: true, ProcessNodes: 1,
	KwokNodes: 1, AuditPodCreates: true}}

var (
	crdsOnce sync.Once
	crdsErr  error
	buildDir string
	binOnce  sync.Once
	binErr   error

	loggerOnce sync.Once
)

func init() {
	afterTests = append(afterTests, func() error {
		if buildDir != "" {
			os.RemoveAll(buildDir)
		}
		if err := cluster.Stop(); err != nil {
			return fmt.Errorf("stopping the shared control plane: %w", err)
		}
		return nil
	})
}

// binary builds the applications the tests run (once) and returns the
// path of name: wordcount or panicapp.
func binary(t testing.TB, name string) string {
	t.Helper()
	binOnce.Do(func() {
		if buildDir, binErr = os.MkdirTemp("", "drover-operator-e2e-"); binErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", buildDir+"/",
			"github.com/drover-project/drover/examples/wordcount",
			"github.com/drover-project/drover/internal/k8s/submit/testdata/panicapp").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(buildDir, name)
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// setup is the shared control plane with the CRDs, a namespace for t with
// drover rbac's driver account, and a client that knows the operator's types.
func setup(t *testing.T) (*testenv.Env, string, client.Client) {
	t.Helper()
	env := cluster.Env(t)
	crdsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		paths, _ := filepath.Glob("../crds/*.yaml")
		crdsErr = env.InstallCRDs(ctx, paths...)
	})
	if crdsErr != nil {
		t.Fatal(crdsErr)
	}
	ns := env.NewNamespace(t)
	if _, err := submit.ApplyRBAC(t.Context(), env.Client, submit.RBACOptions{Namespace: ns, Unconfined: true},
		submit.NamespaceOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return env, ns, c
}

// startOperator runs the operator in this process on ns until t ends; its
// log is printed when t failed.
func startOperator(t *testing.T, env *testenv.Env, ns string) {
	t.Helper()
	var log logtest.Buffer
	// Its global logger, which some of its packages use: quiet.
	loggerOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(ctx, env.Config, controller.Options{Namespace: ns,
			Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
		if t.Failed() {
			t.Logf("operator's log:\n%s", log.String())
		}
	})
}

// processApp is a DroverApplication whose driver and executors run on the
// process node, as local binaries.
func processApp(ns, name, bin string, args ...string) *v1alpha1.DroverApplication {
	return &v1alpha1.DroverApplication{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.DroverApplicationSpec{
			Image:               "drover-test:latest",
			MainApplicationFile: "local://" + bin,
			Arguments:           args,
			Driver:              v1alpha1.DriverSpec{RoleSpec: v1alpha1.RoleSpec{Memory: "256m", ServiceAccount: submit.DefaultServiceAccount}},
			Executor:            v1alpha1.ExecutorSpec{RoleSpec: v1alpha1.RoleSpec{Memory: "256m"}, Instances: ptr.To[int32](2)},
			SparkConf:           map[string]string{"spark.kubernetes.node.selector." + procnode.NodeLabel: "true"},
		},
	}
}

// waitFor polls the application until done says so, and returns it with
// every state it was seen in.
func waitFor(t *testing.T, c client.Client, app *v1alpha1.DroverApplication, timeout time.Duration,
	done func(*v1alpha1.DroverApplication) bool) (*v1alpha1.DroverApplication, []v1alpha1.DroverApplicationStatus) {
	t.Helper()
	var seen []v1alpha1.DroverApplicationStatus
	deadline := time.Now().Add(timeout)
	for {
		cur := &v1alpha1.DroverApplication{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(app), cur); err != nil {
			t.Fatalf("reading %s: %v", app.Name, err)
		}
		if n := len(seen); n == 0 || seen[n-1].State != cur.Status.State || seen[n-1].Executors != cur.Status.Executors {
			seen = append(seen, cur.Status)
		}
		if done(cur) {
			return cur, seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done within %s; status: %+v", app.Name, timeout, cur.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func final(a *v1alpha1.DroverApplication) bool { return a.Status.State.Final() }

// driverPods are the driver pods of ns.
func driverPods(t *testing.T, env *testenv.Env, ns string) []corev1.Pod {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=driver"})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// eventReasons are the reasons of the events about an object, in order.
func eventReasons(t *testing.T, env *testenv.Env, ns string, uid types.UID) []string {
	t.Helper()
	evs, err := env.Client.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := slices.DeleteFunc(evs.Items, func(e eventsv1.Event) bool { return e.Regarding.UID != uid })
	slices.SortStableFunc(items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var out []string
	for _, e := range items {
		out = append(out, e.Reason)
	}
	return out
}

func TestOperatorWordCount(t *testing.T) {
	env, ns, c := setup(t)
	startOperator(t, env, ns)
	input := filepath.Join(t.TempDir(), "input.txt")
	var text strings.Builder
	for i := range 200 {
		fmt.Fprintf(&text, "the quick brown fox %d jumps over the lazy dog\n", i%7)
	}
	if err := os.WriteFile(input, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	app := processApp(ns, "wordcount", binary(t, "wordcount"), input, "3")
	if err := c.Create(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	got, seen := waitFor(t, c, app, 3*time.Minute, final)
	st := got.Status
	t.Logf("states: %+v", seen)
	if st.State != v1alpha1.StateSucceeded || st.Reason != v1alpha1.ReasonDriverSucceeded {
		t.Fatalf("state %s (%s): %s", st.State, st.Reason, st.Message)
	}
	if st.Attempts != 1 || st.AppID != controller.AppID(got.UID, 1) || st.DriverPod == "" || st.StartTime == nil ||
		st.EndTime == nil || st.ExitCode == nil || *st.ExitCode != 0 || st.ObservedGeneration != got.Generation {
		t.Errorf("status: %+v", st)
	}
	var running, uiSeen bool
	for _, s := range seen {
		// The job takes under a second: its executors may be seen pending only.
		running = running || (s.State == v1alpha1.StateRunning && s.Executors.Running+s.Executors.Pending > 0)
		uiSeen = uiSeen || strings.HasPrefix(s.UIAddress, "http://")
	}
	if !running || !uiSeen {
		t.Errorf("never seen Running with executors (%v) and a UI address (%v): %+v", running, uiSeen, seen)
	}
	logs, err := env.ProcessNode.Logs(ns, st.DriverPod)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the\t400\n", "brown\t200\n", "dog\t200\n"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("the driver's log lacks %q:\n%s", want, logs)
		}
	}
	pod, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), st.DriverPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o := metav1.GetControllerOf(pod); o == nil || o.UID != got.UID {
		t.Errorf("the driver pod's controller is %+v, want the DroverApplication", o)
	}
	want := []string{v1alpha1.ReasonSubmitted, v1alpha1.ReasonDriverRunning, v1alpha1.ReasonDriverSucceeded}
	deadline := time.Now().Add(10 * time.Second)
	for r := eventReasons(t, env, ns, got.UID); !slices.Equal(r, want); r = eventReasons(t, env, ns, got.UID) {
		if time.Now().After(deadline) {
			t.Errorf("events %v, want %v", r, want)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestOperatorRetry runs a driver that panics: with OnFailure and two
// retries it runs three times (three driver pods, one create each), then
// fails for good; with Never once.
func TestOperatorRetry(t *testing.T) {
	env, ns, c := setup(t)
	startOperator(t, env, ns)
	panicapp := binary(t, "panicapp")
	retried := processApp(ns, "retried", panicapp)
	retried.Spec.Executor.Instances = ptr.To[int32](0)
	retried.Spec.RestartPolicy = v1alpha1.RestartPolicy{Type: v1alpha1.RestartOnFailure,
		OnFailureRetries: ptr.To[int32](2), OnFailureRetryInterval: ptr.To[int64](1)}
	once := processApp(ns, "once", panicapp)
	once.Spec.Executor.Instances = ptr.To[int32](0)
	for _, app := range []*v1alpha1.DroverApplication{retried, once} {
		if err := c.Create(t.Context(), app); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		app      *v1alpha1.DroverApplication
		attempts int32
		reason   string
	}{{retried, 3, v1alpha1.ReasonRetriesExhausted}, {once, 1, v1alpha1.ReasonDriverFailed}} {
		got, seen := waitFor(t, c, tc.app, 3*time.Minute, final)
		st := got.Status
		if st.State != v1alpha1.StateFailed || st.Reason != tc.reason || st.Attempts != tc.attempts ||
			st.ExitCode == nil || *st.ExitCode == 0 {
			t.Errorf("%s: %+v", tc.app.Name, st)
		}
		if tc.attempts > 1 && !slices.ContainsFunc(seen, func(s v1alpha1.DroverApplicationStatus) bool {
			return s.State == v1alpha1.StateRetrying
		}) {
			t.Errorf("%s: never seen Retrying: %+v", tc.app.Name, seen)
		}
		var pods []string
		for _, p := range driverPods(t, env, ns) {
			if o := metav1.GetControllerOf(&p); o != nil && o.UID == got.UID {
				pods = append(pods, p.Name)
			}
		}
		creates := podCreates(t, env, ns)
		var mine int
		for _, p := range pods {
			mine += creates[p]
		}
		if len(pods) != int(tc.attempts) || mine != int(tc.attempts) {
			t.Errorf("%s: driver pods %v created %d times, want %d", tc.app.Name, pods, mine, tc.attempts)
		}
	}
}

// podCreates counts the operator's successful pod creates in ns by pod
// name, from the API server's audit log.
func podCreates(t *testing.T, env *testenv.Env, ns string) map[string]int {
	t.Helper()
	all, err := env.PodCreates("drover-operator")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, pc := range all {
		if pc.Namespace == ns && pc.Code == 201 {
			out[pc.Name]++
		}
	}
	return out
}

// TestOperatorTTL: a failed application is deleted timeToLiveSeconds
// after its end, and its driver pod with it.
func TestOperatorTTL(t *testing.T) {
	env, ns, c := setup(t)
	startOperator(t, env, ns)
	app := processApp(ns, "short-lived", binary(t, "panicapp"))
	app.Spec.Executor.Instances = ptr.To[int32](0)
	app.Spec.TimeToLiveSeconds = ptr.To[int64](3)
	if err := c.Create(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	got, _ := waitFor(t, c, app, 3*time.Minute, final)
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(app), &v1alpha1.DroverApplication{})
		if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		pods := driverPods(t, env, ns)
		if err != nil && len(pods) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after its end (%s, TTL 3 s): object there %v, driver pods %d", got.Status.EndTime, err == nil, len(pods))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if gone := time.Since(got.Status.EndTime.Time); gone < 3*time.Second {
		t.Errorf("deleted %s after its end, before its TTL of 3 s", gone)
	}
}

// kwokDriverApp is a DroverApplication whose driver pod runs on a kwok node:
// Running at once, never ending by itself.
func kwokDriverApp(ns, name string) *v1alpha1.DroverApplication {
	return &v1alpha1.DroverApplication{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.DroverApplicationSpec{
			Image:               "drover-test:latest",
			MainApplicationFile: "local:///app/none",
			Driver: v1alpha1.DriverSpec{RoleSpec: v1alpha1.RoleSpec{ServiceAccount: submit.DefaultServiceAccount,
				PodTemplate: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{testenv.KwokToleration}}}}},
			SparkConf: map[string]string{"spark.kubernetes.node.selector." + testenv.KwokNodeLabel: "true"},
		},
	}
}

// TestOperatorSuspend: suspended, nothing runs; resumed, the driver runs;
// suspended again, its pod is deleted; resumed, a second attempt runs.
func TestOperatorSuspend(t *testing.T) {
	env, ns, c := setup(t)
	startOperator(t, env, ns)
	app := kwokDriverApp(ns, "held")
	app.Spec.Suspend = ptr.To(true)
	if err := c.Create(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	state := func(s v1alpha1.State, attempts int32) func(*v1alpha1.DroverApplication) bool {
		return func(a *v1alpha1.DroverApplication) bool { return a.Status.State == s && a.Status.Attempts == attempts }
	}
	waitFor(t, c, app, time.Minute, state(v1alpha1.StateSuspended, 0))
	time.Sleep(2 * time.Second)
	if pods := driverPods(t, env, ns); len(pods) != 0 {
		t.Fatalf("suspended, yet %d driver pods", len(pods))
	}
	setSuspend := func(v bool) {
		t.Helper()
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"suspend":%v}}`, v))
		if err := c.Patch(t.Context(), app, patch); err != nil {
			t.Fatal(err)
		}
	}
	setSuspend(false)
	first, _ := waitFor(t, c, app, time.Minute, state(v1alpha1.StateRunning, 1))
	setSuspend(true)
	waitFor(t, c, app, time.Minute, state(v1alpha1.StateSuspended, 1))
	deadline := time.Now().Add(time.Minute)
	for len(driverPods(t, env, ns)) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("suspended, the driver pod is still there after a minute")
		}
		time.Sleep(200 * time.Millisecond)
	}
	setSuspend(false)
	second, _ := waitFor(t, c, app, time.Minute, state(v1alpha1.StateRunning, 2))
	if second.Status.DriverPod == first.Status.DriverPod {
		t.Errorf("the second attempt reused driver pod %s", first.Status.DriverPod)
	}
	want := []string{v1alpha1.ReasonSuspended, v1alpha1.ReasonSubmitted, v1alpha1.ReasonDriverRunning,
		v1alpha1.ReasonSuspended, v1alpha1.ReasonSubmitted, v1alpha1.ReasonDriverRunning}
	if got := eventReasons(t, env, ns, app.UID); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}
