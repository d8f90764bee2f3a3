package submit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/master"
)

func TestParseID(t *testing.T) {
	testCases := map[string]struct {
		in      string
		want    ID
		wantErr string
	}{
		"full":         {in: "spark:wc-driver", want: ID{Namespace: "spark", Name: "wc-driver"}},
		"default ns":   {in: "wc-driver", want: ID{Namespace: "default", Name: "wc-driver"}},
		"app id":       {in: "spark:drover-0123456789abcdef", want: ID{Namespace: "spark", Name: "drover-0123456789abcdef"}},
		"glob":         {in: "spark:wc-*", want: ID{Namespace: "spark", Name: "wc-", Glob: true}},
		"glob all":     {in: "spark:*", want: ID{Namespace: "spark", Glob: true}},
		"empty ns":     {in: ":wc", wantErr: "the namespace before ':' is empty; expected namespace:driver-pod or namespace:application-id"},
		"bad ns":       {in: "Spark_NS:wc", wantErr: `"Spark_NS" is not a namespace name`},
		"no name":      {in: "spark:", wantErr: "no driver pod or application id; expected"},
		"inner star":   {in: "spark:w*c", wantErr: "* is allowed only at the end"},
		"white spaces": {in: " spark:wc ", want: ID{Namespace: "spark", Name: "wc"}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseID(tc.in, "default")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestResource(t *testing.T) {
	testCases := map[string]struct{ in, want, wantErr string }{
		"local":     {in: "local:///app/wc", want: "/app/wc"},
		"absolute":  {in: "/app/wc", want: "/app/wc"},
		"relative":  {in: "wc", wantErr: "expected local:///path/in/the/image"},
		"remote":    {in: "https://example.com/wc", wantErr: "drover does not upload files"},
		"local rel": {in: "local://app/wc", wantErr: "expected local:///absolute/path"},
		"empty":     {in: "", wantErr: "no application resource"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			got, err := Resource(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Resource(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestPrepare(t *testing.T) {
	conf := config.New().
		Set("spark.master", "k8s://https://kube.example:6443").
		Set("spark.kubernetes.namespace", "spark").
		Set("spark.kubernetes.container.image", "img").
		Set("spark.kubernetes.authenticate.submission.oauthToken", "submitter-only").
		Set("spark.kubernetes.context", "mine")
	p, err := Prepare(conf, "local:///app/wordcount", []string{"in.txt"}, func() string { return "drover-00112233aabbccdd" })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.ID(), "spark:wordcount-00112233-driver"; got != want {
		t.Errorf("id %s, want %s", got, want)
	}
	want := map[string]string{
		"spark.app.id":                     "drover-00112233aabbccdd",
		"spark.app.name":                   "wordcount",
		"spark.master":                     "k8s://https://kubernetes.default.svc",
		"spark.submit.deployMode":          "cluster",
		"spark.kubernetes.namespace":       "spark",
		"spark.kubernetes.driver.pod.name": "wordcount-00112233-driver",
		"spark.driver.port":                "7078",
		"spark.kubernetes.container.image": "img",
	}
	if diff := cmp.Diff(want, p.DriverProperties); diff != "" {
		t.Errorf("driver properties (-want +got):\n%s", diff)
	}
	if _, err := Prepare(config.New().Set("spark.master", "local[2]"), "local:///app", nil, master.NewAppID); err == nil ||
		!strings.Contains(err.Error(), "cluster mode needs a Kubernetes master") {
		t.Errorf("local master: %v", err)
	}
}

// TestPrepareUIToken: submit makes the UI's token, keeps it with the
// driver's secret settings (never its config map), and marks the driver pod
// so that drover ui finds it; a token set by the user is kept, and
// drover.ui.requireToken=false makes none.
func TestPrepareUIToken(t *testing.T) {
	const userToken = "the-users-own-token-0123456789"
	testCases := map[string]struct {
		conf      []string
		wantToken string // "" none, "*" a generated one
	}{
		"generated":    {wantToken: "*"},
		"the user's":   {conf: []string{"drover.ui.token=" + userToken}, wantToken: userToken},
		"an open UI":   {conf: []string{"drover.ui.requireToken=false"}},
		"no UI at all": {conf: []string{"spark.ui.enabled=false"}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			conf := config.New().Set("spark.master", "k8s://https://kube.example:6443").
				Set("spark.kubernetes.namespace", "spark").Set("spark.kubernetes.container.image", "img")
			for _, kv := range tc.conf {
				k, v, _ := strings.Cut(kv, "=")
				conf.Set(k, v)
			}
			p, err := Prepare(conf, "local:///app/wordcount", nil, func() string { return "drover-00112233aabbccdd" })
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := p.DriverProperties["drover.ui.token"]; ok {
				t.Error("the UI's token is in the driver's config map")
			}
			got, annotation := p.DriverSecrets["drover.ui.token"], p.Pod.Annotations[podspec.AnnotationUIToken]
			switch tc.wantToken {
			case "":
				if got != "" || annotation != "" {
					t.Errorf("token %q, annotation %q; want neither", got, annotation)
				}
			case "*":
				if len(got) < 43 || got == secondToken(t, conf) {
					t.Errorf("generated token %q: want a new random one", got)
				}
			default:
				if got != tc.wantToken {
					t.Errorf("token %q, want %q", got, tc.wantToken)
				}
			}
			if tc.wantToken != "" && (annotation != p.Driver.SecretName || annotation != podspec.DriverSecretName(p.AppID)) {
				t.Errorf("annotation %s=%q, want the driver's Secret %q", podspec.AnnotationUIToken, annotation, p.Driver.SecretName)
			}
		})
	}
}

// secondToken is the token a second submission of conf generates.
func secondToken(t *testing.T, conf *config.Conf) string {
	t.Helper()
	p, err := Prepare(conf, "local:///app/wordcount", nil, func() string { return "drover-00112233aabbccdd" })
	if err != nil {
		t.Fatal(err)
	}
	return p.DriverSecrets["drover.ui.token"]
}

// The executor pod template is a file on the submitter's machine: submit
// uploads it with the driver's configuration and points the driver at it.
func TestPrepareUploadsExecutorTemplate(t *testing.T) {
	dir := t.TempDir()
	tmpl := "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    team: data\n"
	good := filepath.Join(dir, "exec.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("kind: Deployment\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := func(file string) *config.Conf {
		return config.New().Set("spark.master", "k8s://https://kube.example:6443").
			Set("spark.kubernetes.container.image", "img").
			Set("spark.kubernetes.executor.podTemplateFile", file)
	}
	p, err := Prepare(conf(good), "local:///app/wc", nil, master.NewAppID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"executor-pod-template.yaml": tmpl}, p.DriverFiles); diff != "" {
		t.Errorf("uploaded files (-want +got):\n%s", diff)
	}
	if got := p.DriverProperties["spark.kubernetes.executor.podTemplateFile"]; got != "/opt/drover/conf/executor-pod-template.yaml" {
		t.Errorf("the driver reads its executor template at %q", got)
	}
	for file, want := range map[string]string{
		filepath.Join(dir, "missing.yaml"): "no such file",
		bad:                                "not a v1 Pod",
	} {
		_, err := Prepare(conf(file), "local:///app/wc", nil, master.NewAppID)
		if err == nil || !strings.Contains(err.Error(), "spark.kubernetes.executor.podTemplateFile="+file) || !strings.Contains(err.Error(), want) {
			t.Errorf("template %s: error %v, want one naming the key, the file and %q", file, err, want)
		}
	}
}

func pod(phase corev1.PodPhase, exit *int32, rv string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wc-driver", Namespace: "spark", ResourceVersion: rv,
			Labels: map[string]string{"spark-app-selector": "app-1", "spark-role": "driver"}},
		Spec:   corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: phase},
	}
	cs := corev1.ContainerStatus{Name: "spark-kubernetes-driver"}
	if exit != nil {
		cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: *exit, Reason: "Error", Message: "panic: boom"}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return p
}

// TestWatcherSurvivesGone expires the first watch with 410 Gone while the
// driver fails: the informer lists again and the outcome is not lost.
func TestWatcherSurvivesGone(t *testing.T) {
	cs := fake.NewClientset(pod(corev1.PodRunning, nil, "1"))
	// The lists are counted, not the watches: the relist already carries the
	// failure, so Wait may return before the reflector opens its next watch.
	var lists, watches atomic.Int32
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return false, nil, nil
	})
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		if watches.Add(1) > 1 {
			return false, nil, nil // the tracker's own watch
		}
		w := watch.NewFake()
		go func() {
			// The driver fails while the watch is expiring.
			exit := int32(3)
			_ = cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod(corev1.PodFailed, &exit, "2"), "spark")
			w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
		}()
		return true, w, nil
	})
	out := &logtest.Buffer{}
	clk := clocktesting.NewFakeClock(time.Now())
	w := &Watcher{Client: cs, Namespace: "spark", Pod: "wc-driver", AppID: "app-1", Container: "spark-kubernetes-driver",
		Interval: time.Second, Clock: clk, Out: out}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := w.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Outcome{Phase: corev1.PodFailed, ExitCode: 3, Reason: "Error", Message: "panic: boom"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcome (-want +got):\n%s\noutput:\n%s", diff, out)
	}
	if lists.Load() < 2 {
		t.Errorf("the pods were listed %d times; want a relist after 410 Gone", lists.Load())
	}
	if !strings.Contains(out.String(), "Failed on node-1, container exited with code 3 (Error)") {
		t.Errorf("output:\n%s", out)
	}
}

// TestWatcherReports prints a status line on each tick of the clock.
func TestWatcherReports(t *testing.T) {
	cs := fake.NewClientset(pod(corev1.PodRunning, nil, "1"))
	out := &logtest.Buffer{}
	clk := clocktesting.NewFakeClock(time.Now())
	w := &Watcher{Client: cs, Namespace: "spark", Pod: "wc-driver", AppID: "app-1", Container: "spark-kubernetes-driver",
		Interval: 5 * time.Second, Clock: clk, Out: out}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan Outcome, 1)
	go func() {
		o, _ := w.Wait(ctx)
		done <- o
	}()
	waitUntil(t, func() bool { return strings.Contains(out.String(), "Running on node-1") })
	for !strings.Contains(out.String(), "status: Running on node-1 for 5s") {
		waitUntil(t, clk.HasWaiters)
		clk.Step(5 * time.Second)
		waitUntil(t, func() bool { return strings.Contains(out.String(), "status:") })
	}
	zero := int32(0)
	ok := pod(corev1.PodSucceeded, &zero, "2")
	ok.Status.ContainerStatuses[0].State.Terminated.Reason = "Completed"
	if _, err := cs.CoreV1().Pods("spark").UpdateStatus(ctx, ok, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if o := <-done; !o.Succeeded() {
		t.Errorf("outcome %+v", o)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	// The watcher runs on its own goroutine: poll.
	if wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }) != nil {
		t.Fatal("condition not met within 10s")
	}
}

// executorPod is an executor pod of app-1 in phase.
func executorPod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "spark",
			Labels: map[string]string{"spark-app-selector": "app-1", "spark-role": "executor"}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// listerOf is a podLister over a fixed set of pods.
type listerOf []*corev1.Pod

func (l listerOf) List(sel labels.Selector) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range l {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

// TestWatcherExecutorsLine is the executor part of submit's lines: what
// holds executors back while the driver runs, and in a final state only
// what is true.
func TestWatcherExecutorsLine(t *testing.T) {
	held := pod(corev1.PodRunning, nil, "1")
	held.Annotations = map[string]string{podspec.AnnotationExecutorsHeld: "4 held back by ResourceQuota pods3"}
	terminating := held.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	running := pod(corev1.PodRunning, nil, "1")
	two := listerOf{executorPod("e1", corev1.PodRunning), executorPod("e2", corev1.PodRunning)}
	mixed := listerOf{executorPod("e1", corev1.PodRunning), executorPod("e2", corev1.PodPending),
		executorPod("e3", ""), executorPod("e4", corev1.PodFailed), held}
	testCases := map[string]struct {
		pods   listerOf
		driver *corev1.Pod
		final  bool
		want   string
	}{
		"nothing yet":         {driver: running, want: ""},
		"no driver seen":      {pods: two, want: "; executors: 2 running, 0 pending"},
		"running":             {pods: two, driver: running, want: "; executors: 2 running, 0 pending"},
		"by phase":            {pods: mixed, driver: running, want: "; executors: 1 running, 2 pending, 1 ended"},
		"held back":           {pods: two, driver: held, want: "; executors: 2 running, 0 pending, 4 held back by ResourceQuota pods3"},
		"all held back":       {driver: held, want: "; executors: 0 running, 0 pending, 4 held back by ResourceQuota pods3"},
		"driver terminating":  {pods: two, driver: terminating, want: "; executors: 2 running, 0 pending"},
		"final, live pods":    {pods: two, driver: held, final: true, want: "; executors: 2 stopping"},
		"final, mixed":        {pods: mixed, driver: running, final: true, want: "; executors: 3 stopping"},
		"final, all ended":    {pods: listerOf{executorPod("e1", corev1.PodSucceeded)}, driver: running, final: true, want: ""},
		"final, none and cap": {driver: held, final: true, want: ""},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if got := executorsLine(tc.pods, tc.driver, tc.final); got != tc.want {
				t.Errorf("executorsLine = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWatcherShowsHeldExecutors follows a driver whose executors a quota
// holds back: the state and status lines say so, a line comes when the
// cap ends, and once the driver succeeded the last line does not count
// its executors as running.
func TestWatcherShowsHeldExecutors(t *testing.T) {
	driver := pod(corev1.PodRunning, nil, "1")
	driver.Annotations = map[string]string{podspec.AnnotationExecutorsHeld: "4 held back by ResourceQuota pods3"}
	cs := fake.NewClientset(executorPod("e1", corev1.PodRunning), executorPod("e2", corev1.PodRunning), driver)
	out := &logtest.Buffer{}
	clk := clocktesting.NewFakeClock(time.Now())
	w := &Watcher{Client: cs, Namespace: "spark", Pod: "wc-driver", AppID: "app-1", Container: "spark-kubernetes-driver",
		Interval: 5 * time.Second, Clock: clk, Out: out}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan Outcome, 1)
	go func() {
		o, err := w.Wait(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- o
	}()
	waitUntil(t, func() bool { return strings.Contains(out.String(), "Running on node-1") })
	const status = "status: Running on node-1 for 5s; executors: 2 running, 0 pending, 4 held back by ResourceQuota pods3\n"
	for !strings.Contains(out.String(), status) {
		waitUntil(t, clk.HasWaiters)
		clk.Step(5 * time.Second)
		waitUntil(t, func() bool { return strings.Contains(out.String(), "status:") })
		if strings.Count(out.String(), "status:") > 3 {
			t.Fatalf("no status line %q:\n%s", status, out)
		}
	}
	// The cap ends: a line says so at once.
	driver.Annotations = nil
	driver.ResourceVersion = "2"
	if _, err := cs.CoreV1().Pods("spark").Update(ctx, driver, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool {
		return strings.HasSuffix(out.String(), "wc-driver: Running on node-1; executors: 2 running, 0 pending\n")
	})
	// The driver succeeds before its executor pods are gone (and a stale
	// annotation would not count either).
	zero := int32(0)
	ok := pod(corev1.PodSucceeded, &zero, "3")
	ok.Annotations = map[string]string{podspec.AnnotationExecutorsHeld: "4 held back by ResourceQuota pods3"}
	ok.Status.ContainerStatuses[0].State.Terminated.Reason = "Completed"
	if _, err := cs.CoreV1().Pods("spark").Update(ctx, ok, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if o := <-done; !o.Succeeded() {
		t.Errorf("outcome %+v", o)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	if want := "drover: spark/wc-driver: Succeeded on node-1, container exited with code 0 (Completed); executors: 2 stopping"; last != want {
		t.Errorf("last line %q, want %q; output:\n%s", last, want, out)
	}
	t.Logf("output:\n%s", out)
}

// TestWatcherNamesDeletion: a driver whose pod is deleted gracefully ends
// (SIGTERM, or SIGKILL after the grace period) and its node reports the
// exit before the object goes; the outcome is the deletion, not the exit
// code. A driver that ends well while its pod is deleted still succeeded.
func TestWatcherNamesDeletion(t *testing.T) {
	for name, tc := range map[string]struct {
		exit int32
		want Outcome
	}{
		"killed":   {exit: 137, want: Outcome{Phase: corev1.PodFailed, Deleted: true, ExitCode: 137, Reason: "Error", Message: "panic: boom"}},
		"finished": {exit: 0, want: Outcome{Phase: corev1.PodSucceeded, ExitCode: 0, Reason: "Error", Message: "panic: boom"}},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(pod(corev1.PodRunning, nil, "1"))
			out := &logtest.Buffer{}
			w := &Watcher{Client: cs, Namespace: "spark", Pod: "wc-driver", AppID: "app-1", Container: "spark-kubernetes-driver",
				Interval: time.Second, Clock: clocktesting.NewFakeClock(time.Now()), Out: out}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan Outcome, 1)
			go func() {
				o, err := w.Wait(ctx)
				if err != nil {
					t.Error(err)
				}
				done <- o
			}()
			waitUntil(t, func() bool { return strings.Contains(out.String(), "Running on node-1") })
			terminating := pod(corev1.PodRunning, nil, "2")
			terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			if _, err := cs.CoreV1().Pods("spark").Update(ctx, terminating, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, func() bool { return strings.Contains(out.String(), "Running (terminating) on node-1") })
			phase := corev1.PodFailed
			if tc.exit == 0 {
				phase = corev1.PodSucceeded
			}
			ended := pod(phase, &tc.exit, "3")
			ended.DeletionTimestamp = terminating.DeletionTimestamp
			if _, err := cs.CoreV1().Pods("spark").Update(ctx, ended, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, <-done); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\noutput:\n%s", diff, out)
			}
		})
	}
}

// A driver pod a queue holds says so, rather than that it is not
// scheduled.
func TestDescribeGatedDriver(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{snapshot.LabelKueueQueue: "team-a"}},
		Spec:       corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: snapshot.GateKueue}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates"}}},
	}
	if got, want := Describe(p, ""), "Pending, waiting for queue admission (queue team-a)"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
	if got, want := Describe(p, ""), "Pending, held by scheduling gate example.com/hold"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}
