//go:build integration && realnode

package submit_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/testenv"
)

// realCluster is the control plane of this package's real-node tests, with
// a real node (kubelet, containerd, runc) whose pods run the application
// images users would build (hack/image): it lives in the run's network
// namespace (make realnode, hack/realnode-netns.sh).
var realCluster = &testenv.Shared{Options: testenv.Options{Scheduler: true, ControllerManager: true, RealNode: true}}

func init() {
	afterTests = append(afterTests, func() error {
		if err := realCluster.Stop(); err != nil {
			return fmt.Errorf("stopping the real-node control plane: %w", err)
		}
		return nil
	})
}

// realApps are the applications the real node's images hold, each in an
// image of its own, drover.invalid/<name>:test, with its binary at
// /app/<name> (the Dockerfile's layout).
var realApps = map[string]string{
	"wordcount":  "./examples/wordcount",
	"nodeapp":    "./internal/k8s/submit/testdata/nodeapp",
	"restartapp": "./internal/k8s/submit/testdata/restartapp",
}

var (
	realImagesOnce sync.Once
	realImagesErr  error
)

// realEnv is the real-node environment with the applications' images
// imported into its node.
func realEnv(t *testing.T) *testenv.Env {
	t.Helper()
	env := realCluster.Env(t)
	realImagesOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drover-realnode-images-")
		if err != nil {
			realImagesErr = err
			return
		}
		defer os.RemoveAll(dir)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		// Built side by side: the links of three large static binaries
		// are most of it.
		errs := make(chan error, len(realApps))
		var tars []string
		for name, pkg := range realApps {
			tar := filepath.Join(dir, name+".tar")
			tars = append(tars, tar)
			go func() {
				if err := testenv.BuildAppImage(ctx, tar, pkg, realImage(name)); err != nil {
					errs <- fmt.Errorf("building the image of %s: %w", pkg, err)
					return
				}
				errs <- nil
			}()
		}
		for range realApps {
			if err := <-errs; err != nil && realImagesErr == nil {
				realImagesErr = err
			}
		}
		if realImagesErr == nil {
			realImagesErr = env.RealNode.Import(ctx, tars...)
		}
	})
	if realImagesErr != nil {
		t.Fatal(realImagesErr)
	}
	return env
}

func realImage(app string) string { return "drover.invalid/" + app + ":test" }

// realStore is an S3 server for t, reachable from the real node's pods at
// the node's address, with the buckets input and out and the word input at
// s3://input/words.txt; it returns the server, the submit flags that point
// drover at it, and the input's local copy.
func realStore(t *testing.T, env *testenv.Env) (*testenv.S3, []string, string) {
	t.Helper()
	store := testenv.NewS3(t)
	addr, err := env.RealNode.Expose(strings.TrimPrefix(store.Endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"input", "out"} {
		if err := store.CreateBucket(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	input := wordInput(t)
	text, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Client().PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("input"), Key: aws.String("words.txt"), Body: bytes.NewReader(text)}); err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, kv := range store.Conf() {
		if strings.HasPrefix(kv, "spark.hadoop.fs.s3a.endpoint=") {
			kv = "spark.hadoop.fs.s3a.endpoint=http://" + addr
		}
		flags = append(flags, "--conf", kv)
	}
	for _, kv := range store.Env() {
		flags = append(flags, "--conf", "spark.executorEnv."+kv, "--conf", "spark.kubernetes.driverEnv."+kv)
	}
	return store, flags, input
}

// realArgs are submit's flags for app in cluster mode on the real node, in
// namespace ns: the app's image (never pulled: it was imported), the
// driver's service account, and pod templates that tolerate the node's
// taint. The program's arguments follow extra.
func realArgs(t *testing.T, env *testenv.Env, ns, app string, extra ...string) []string {
	t.Helper()
	tmpl := filepath.Join(t.TempDir(), "tolerate.yaml")
	tol := testenv.RealNodeToleration
	template := fmt.Sprintf(`apiVersion: v1
kind: Pod
spec:
  tolerations:
  - {key: %q, operator: %q, value: %q, effect: %q}
`, tol.Key, tol.Operator, tol.Value, tol.Effect)
	if err := os.WriteFile(tmpl, []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"submit", "--master", "k8s://" + env.URL, "--deploy-mode", "cluster", "--name", app,
		"--conf", "spark.kubernetes.namespace=" + ns,
		"--conf", "spark.kubernetes.container.image=" + realImage(app),
		"--conf", "spark.kubernetes.container.image.pullPolicy=Never",
		"--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver",
		"--conf", "spark.kubernetes.node.selector." + testenv.RealNodeLabel + "=true",
		"--conf", "spark.kubernetes.driver.podTemplateFile=" + tmpl,
		"--conf", "spark.kubernetes.executor.podTemplateFile=" + tmpl,
		"--conf", "spark.kubernetes.report.interval=2s",
		// The node has two cores: a whole one each would leave an
		// executor pending.
		"--conf", "spark.kubernetes.driver.request.cores=250m", "--conf", "spark.kubernetes.executor.request.cores=250m",
		"--driver-memory", "256m", "--executor-memory", "256m", "--num-executors", "2",
	}
	return append(args, extra...)
}

// podLog is the log of pod's container (its first when container is
// empty), read through the API server from the kubelet.
func podLog(t testing.TB, env *testenv.Env, ns, pod, container string) string {
	t.Helper()
	b, err := env.Client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("reading the log of %s/%s: %v", ns, pod, err)
	}
	return string(b)
}

// countsBetween are the lines a driver printed between begin and end.
func countsBetween(log, begin, end string) []string {
	_, rest, ok := strings.Cut(log, begin+"\n")
	if !ok {
		return nil
	}
	body, _, _ := strings.Cut(rest, end)
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	slices.Sort(lines)
	return lines
}

// TestRealNodeWordCount runs examples/wordcount in cluster mode as users
// would: its image, built by hack/image from the Dockerfile's layout, runs
// the driver and two executors as containers on a real kubelet, in a
// namespace that enforces the restricted Pod Security profile (non-root,
// a read-only root file system, no capabilities), with the configuration
// and TLS material in ConfigMap and Secret volumes the kubelet mounts,
// reading from and writing to the S3 server.
func TestRealNodeWordCount(t *testing.T) {
	env := realEnv(t)
	ns := restrictedNamespace(t, env)
	store, s3Flags, input := realStore(t, env)
	// Executor pods stay (labelled inactive) for the checks below.
	flags := append(s3Flags, "--conf", "spark.kubernetes.executor.deleteOnTermination=false")
	args := append(realArgs(t, env, ns, "wordcount", flags...), "local:///app/wordcount", "s3://input/words.txt", "3", "s3://out/counts")
	r := drover(t, env.Kubeconfig, 4*time.Minute, args...)
	t.Logf("drover submit:\n%s", r.stderr)
	if r.code != 0 {
		t.Fatalf("exit code %d, want 0", r.code)
	}
	got := savedLines(t, store, "out", "counts/")
	slices.Sort(got)
	if diff := cmp.Diff(wantCounts(t, input), got); diff != "" {
		t.Errorf("the saved counts (-want +got):\n%s", diff)
	}
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, p := range pods.Items {
		role := p.Labels["spark-role"]
		roles[role]++
		if p.Spec.NodeName != testenv.RealNodeName {
			t.Errorf("pod %s ran on %q, want the real node", p.Name, p.Spec.NodeName)
		}
		if len(p.Status.ContainerStatuses) == 0 {
			t.Errorf("pod %s ran no container", p.Name)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Image != realImage("wordcount") || cs.ImageID == "" {
				t.Errorf("pod %s's container %s ran image %q (id %q), want %s", p.Name, cs.Name, cs.Image, cs.ImageID, realImage("wordcount"))
			}
		}
		for _, c := range p.Spec.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("pod %s's container %s has a writable root file system", p.Name, c.Name)
			}
		}
		if role == "driver" {
			var kinds []string
			for _, v := range p.Spec.Volumes {
				switch {
				case v.Secret != nil:
					kinds = append(kinds, "secret")
				case v.ConfigMap != nil:
					kinds = append(kinds, "configMap")
				}
			}
			if !slices.Contains(kinds, "secret") || !slices.Contains(kinds, "configMap") {
				t.Errorf("the driver pod's volumes are %v, want a Secret and a ConfigMap", kinds)
			}
			log := podLog(t, env, ns, p.Name, "")
			if !strings.Contains(log, "application started") {
				t.Errorf("the driver did not start its executors:\n%s", log)
			}
		}
	}
	if roles["driver"] != 1 || roles["executor"] != 2 {
		t.Errorf("pods by role: %v, want 1 driver and 2 executors", roles)
	}
}

// runNodeApp submits nodeapp with NODEAPP_FAULT=fault in its executors,
// and the extra flags, in a new restricted namespace; it returns the
// namespace and submit's result once the application ended.
func runNodeApp(t *testing.T, env *testenv.Env, fault string, during func(ns string), extra ...string) (string, result) {
	t.Helper()
	ns := restrictedNamespace(t, env)
	_, s3Flags, input := realStore(t, env)
	// Executor pods stay (labelled inactive), to be counted and read.
	flags := append(slices.Clone(s3Flags), "--conf", "spark.executorEnv.NODEAPP_FAULT="+fault,
		"--conf", "spark.kubernetes.executor.deleteOnTermination=false")
	args := append(realArgs(t, env, ns, "nodeapp", append(flags, extra...)...), "local:///app/nodeapp", "s3://input/words.txt")
	done := startDrover(t, env.Kubeconfig, 5*time.Minute, args...)
	if during != nil {
		during(ns)
	}
	r := <-done
	t.Logf("drover submit:\n%s", r.stderr)
	if r.code != 0 {
		t.Fatalf("exit code %d, want 0", r.code)
	}
	log := podLog(t, env, ns, onlyDriverPod(t, env, ns), "")
	if diff := cmp.Diff(wantCounts(t, input), countsBetween(log, "nodeapp: counts", "nodeapp: end")); diff != "" {
		t.Errorf("the driver's counts (-want +got):\n%s\ndriver log:\n%s", diff, log)
	}
	return ns, r
}

// driverSays checks that the driver's log in ns has every one of want,
// and returns the log.
func driverSays(t *testing.T, env *testenv.Env, ns string, want ...string) string {
	t.Helper()
	log := podLog(t, env, ns, onlyDriverPod(t, env, ns), "")
	for _, w := range want {
		if !strings.Contains(log, w) {
			t.Errorf("the driver's log lacks %q:\n%s", w, log)
		}
	}
	return log
}

// TestRealNodeExecutorOOMKilled: a task allocates past its executor's
// memory limit (spark.executor.memory plus the overhead), the kernel's
// OOM killer ends the container, and the driver names the cause and the
// setting to raise, replaces the executor, and the job finishes.
func TestRealNodeExecutorOOMKilled(t *testing.T) {
	env := realEnv(t)
	ns, _ := runNodeApp(t, env, "oom", nil)
	log := driverSays(t, env, ns, "OOMKilled by the kernel", "exit code 137", "spark.executor.memoryOverhead")
	for line := range strings.Lines(log) {
		if strings.Contains(line, "OOMKilled") {
			t.Logf("the driver: %s", strings.TrimSpace(line))
		}
	}
	if n := podCount(t, env, ns, "spark-role=executor"); n < 3 {
		t.Errorf("%d executor pods were created, want 3 or more: the OOM-killed one replaced", n)
	}
}

// TestRealNodeLocalDirEvicted: spark.local.dir on an emptyDir with a
// sizeLimit; a task that writes past it gets its pod evicted by the
// kubelet, and the driver names the eviction and its message.
func TestRealNodeLocalDirEvicted(t *testing.T) {
	env := realEnv(t)
	vol := "spark.kubernetes.executor.volumes.emptyDir.spark-local-dir-1."
	ns, _ := runNodeApp(t, env, "fill", nil,
		"--conf", vol+"mount.path=/local", "--conf", vol+"options.sizeLimit=16Mi",
		"--conf", "spark.executorEnv.NODEAPP_FILL_DIR=/local")
	log := driverSays(t, env, ns, "was evicted by the kubelet", "spark-local-dir-1")
	for line := range strings.Lines(log) {
		if strings.Contains(line, "evicted") {
			t.Logf("the driver: %s", strings.TrimSpace(line))
		}
	}
}

// podCount is how many pods matching selector ns has had, counted by the
// executor ids the driver gave them (deleted ones included): the driver
// numbers its executors 1, 2, … in creation order.
func podCount(t *testing.T, env *testenv.Env, ns, selector string) int {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, p := range pods.Items {
		var id int
		if _, err := fmt.Sscan(p.Labels["spark-exec-id"], &id); err == nil {
			most = max(most, id)
		}
	}
	return most
}

// TestRealNodeGracefulDelete deletes both executor pods gracefully while
// one runs a task that never ends: the kubelet sends SIGTERM, each
// executor decommissions (stops taking tasks), the idle one exits within
// the grace period as SIGTERM's process (143), the busy one is SIGKILLed
// (137) when the grace period is over, and the job finishes on
// replacements.
func TestRealNodeGracefulDelete(t *testing.T) {
	env := realEnv(t)
	const grace = 6 * time.Second
	type ending struct {
		exitCode int32
		after    time.Duration
		log      string
	}
	endings := map[string]ending{}
	during := func(ns string) {
		busy := awaitExecutorLine(t, env, ns, "nodeapp: hang starting")
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=executor"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, p := range pods.Items {
			logs := followLog(t, env, ns, p.Name)
			began := time.Now()
			if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				code, at := awaitTerminated(t, env, ns, p.Name)
				mu.Lock()
				endings[p.Name] = ending{code, at.Sub(began), <-logs}
				mu.Unlock()
			})
		}
		wg.Wait()
		for name, e := range endings {
			t.Logf("executor pod %s: exit %d after %s (busy: %v)", name, e.exitCode, e.after.Round(10*time.Millisecond), name == busy)
			if !strings.Contains(e.log, "decommissioning") {
				t.Errorf("executor pod %s did not decommission on SIGTERM; its log:\n%s", name, e.log)
			}
			switch {
			case name == busy && (e.exitCode != 137 || e.after < grace-time.Second):
				t.Errorf("the busy executor %s ended with %d after %s, want 137 (SIGKILL) once the %s grace period was over", name, e.exitCode, e.after, grace)
			case name != busy && (e.exitCode != 143 || e.after >= grace):
				t.Errorf("the idle executor %s ended with %d after %s, want 143 (SIGTERM) within the %s grace period", name, e.exitCode, e.after, grace)
			}
		}
	}
	runNodeApp(t, env, "hang", during, "--conf", fmt.Sprintf("spark.kubernetes.executor.terminationGracePeriodSeconds=%d", int(grace.Seconds())))
	if len(endings) != 2 {
		t.Errorf("saw %d executor pods end, want 2", len(endings))
	}
}

// awaitExecutorLine waits until the log of an executor pod of ns has line
// and returns that pod's name.
func awaitExecutorLine(t *testing.T, env *testenv.Env, ns, line string) string {
	t.Helper()
	found := ""
	if !poll(3*time.Minute, 200*time.Millisecond, func() bool {
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=executor"})
		if err != nil {
			return false
		}
		for _, p := range pods.Items {
			b, err := env.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
			if err == nil && strings.Contains(string(b), line) {
				found = p.Name
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no executor of %s logged %q", ns, line)
	}
	return found
}

// followLog streams pod's log from now on and sends it all once the
// container ends.
func followLog(t *testing.T, env *testenv.Env, ns, pod string) <-chan string {
	t.Helper()
	out := make(chan string, 1)
	stream, err := env.Client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Follow: true}).Stream(t.Context())
	if err != nil {
		t.Fatalf("following the log of %s: %v", pod, err)
	}
	go func() {
		defer stream.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(stream)
		out <- b.String()
	}()
	return out
}

// awaitTerminated waits until pod's first container has terminated and
// returns its exit code and when this process saw it.
func awaitTerminated(t *testing.T, env *testenv.Env, ns, pod string) (int32, time.Time) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	w, err := env.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod})
	if err != nil {
		t.Error(err)
		return -1, time.Now()
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil {
				return term.ExitCode, time.Now()
			}
		}
	}
	t.Errorf("executor pod %s did not end within 2 minutes of its deletion", pod)
	return -1, time.Now()
}

// TestRealNodeDriverRestartInPlace kills the driver's container while its
// job runs: with spark.kubernetes.driver.restartPolicy=OnFailure the real
// kubelet starts it again in the same pod, the second attempt adopts the
// executors and finishes the job, and the output is right.
func TestRealNodeDriverRestartInPlace(t *testing.T) {
	env := realEnv(t)
	ns := restrictedNamespace(t, env)
	store, s3Flags, input := realStore(t, env)
	flags := append(slices.Clone(s3Flags), "--conf", "spark.kubernetes.driver.restartPolicy=OnFailure",
		"--conf", "spark.kubernetes.executor.deleteOnTermination=false",
		"--conf", "spark.kubernetes.driverEnv.RESTARTAPP_SAVE_DELAY=60s", "--conf", "spark.executorEnv.RESTARTAPP_SAVE_DELAY=60s")
	args := append(realArgs(t, env, ns, "restartapp", flags...), "local:///app/restartapp", "s3://input/words.txt", "s3://out/counts")
	done := startDrover(t, env.Kubeconfig, 5*time.Minute, args...)

	// Once both executors run (the save stage's tasks wait a minute in
	// the first attempt), SIGKILL the driver's process, as a crash would.
	if !poll(2*time.Minute, 200*time.Millisecond, func() bool {
		return runningExecutors(t, env, ns) == 2
	}) {
		t.Fatal("the executors did not start")
	}
	time.Sleep(5 * time.Second)
	pod := onlyDriverPod(t, env, ns)
	before, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id, ok := strings.CutPrefix(before.Status.ContainerStatuses[0].ContainerID, "containerd://")
	if !ok {
		t.Fatalf("the driver's container id is %q", before.Status.ContainerStatuses[0].ContainerID)
	}
	if out, err := env.RealNode.Ctr(t.Context(), "tasks", "kill", "--signal", "SIGKILL", id); err != nil {
		t.Fatalf("killing the driver's container: %v\n%s", err, out)
	}
	r := <-done
	t.Logf("drover submit:\n%s", r.stderr)
	if r.code != 0 {
		t.Fatalf("exit code %d, want 0", r.code)
	}
	after, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID || after.Status.ContainerStatuses[0].RestartCount != 1 {
		t.Errorf("the driver pod %s (uid %s → %s) restarted its container %d times, want once in place",
			pod, before.UID, after.UID, after.Status.ContainerStatuses[0].RestartCount)
	}
	if !strings.Contains(r.stderr, "driver restarted (attempt 2 of") {
		t.Errorf("submit did not report the restart")
	}
	got := savedLines(t, store, "out", "counts/")
	slices.Sort(got)
	if diff := cmp.Diff(wantCounts(t, input), got); diff != "" {
		t.Errorf("the saved counts (-want +got):\n%s", diff)
	}
	if n := podCount(t, env, ns, "spark-role=executor"); n != 2 {
		t.Errorf("%d executor pods were created, want the 2 the first attempt made, adopted", n)
	}
}
