//go:build integration

package submit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-project/drover/internal/testenv"
)

// TestDriverRestartCrashes: a cluster-mode word count with a sort stage
// (read → reduceByKey → sortByKey → save to s3://), 4 executors,
// spark.kubernetes.driver.restartPolicy=OnFailure, whose driver process is
// SIGKILLed (a) once the sort's map stage is done, (b) while the sort's
// map side runs, (c) after the output was committed, before the driver
// exited, and (d) four times in a row. In (a)–(c) the kubelet restarts the
// driver in its pod and the new attempt adopts the 4 executors (no
// executor pod is created after the crash), takes the map outputs they
// hold (no map task of a completed stage runs again, by the event log),
// leaves a committed output as it is, and saves what a run without a crash
// saves; drover submit says the driver restarted and exits 0. In (d) the
// fifth attempt ends the application: submit exits non-zero with the
// cause, the pod fails for good and no executor is left.
func TestDriverRestartCrashes(t *testing.T) {
	env := cluster.Env(t)
	for _, tc := range []struct {
		name string
		// at is the marker of the moment the driver is killed (without
		// its attempt and partition); kills how many attempts are killed
		// there.
		at    string
		kills int
		env   []string // the application's settings (RESTARTAPP_*)
		// rerun is what a map stage of attempt 2 may be named: "" when
		// no map task may run.
		rerun string
		// committedBy is the attempt whose commit the output's _SUCCESS
		// names (0 for the first).
		committedBy int
	}{
		{name: "after the sort's map stage", at: "save", kills: 1, env: []string{"RESTARTAPP_SAVE_DELAY=20s"}, committedBy: 1},
		{name: "during the sort's map side", at: "sortmap", kills: 1, env: []string{"RESTARTAPP_SORT_DELAY=20s"},
			rerun: "restartapp.sortmap", committedBy: 1},
		{name: "after the commit", at: "saved", kills: 1, env: []string{"RESTARTAPP_EXIT_DELAY=30s"}, committedBy: 0},
		{name: "four times", at: "save", kills: 4, env: []string{"RESTARTAPP_SAVE_DELAY=20s", "RESTARTAPP_SLOW_ALWAYS=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRestartApp(t, env, tc.env...)
			for i := range tc.kills {
				r.await(i+1, tc.at)
				if err := env.SignalContainer(r.ns, r.driverPod(), "", syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				t.Logf("SIGKILLed attempt %d of the driver", i+1)
			}
			err := r.wait()
			if execs := r.executorCreates(); len(execs) != 4 {
				t.Errorf("executor pods created: %v, want the first attempt's 4 only", execs)
			}
			if tc.kills == 4 {
				checkOutOfRestarts(t, env, r.ns, r.driverPod(), err, r.stderr.String())
				return
			}
			if err != nil {
				t.Fatalf("drover submit: %v, want exit 0", err)
			}
			if !strings.Contains(r.stderr.String(), "driver restarted (attempt 2 of 4): exit 137") {
				t.Errorf("submit did not report the restart")
			}
			r.checkOutput(tc.committedBy)
			// No map task of a stage that completed before the crash ran
			// again.
			for stage, tasks := range mapTasks(t, r.store, "events") {
				if tc.rerun == "" || !strings.Contains(stage, tc.rerun) {
					t.Errorf("attempt 2 ran %d tasks of map stage %q, which attempt 1 completed", tasks, stage)
				}
			}
		})
	}
}

// TestDriverRestartZombie: a driver frozen (SIGSTOP) while its save stage
// runs, replaced, then thawed commits nothing. A kubelet never runs two
// processes of one container, so the replacement is what a newer attempt
// does first: it claims the next epoch on the pod (the test writes the
// claim). Thawed, the first attempt finishes its tasks but its commit's
// fence finds the newer epoch: it fails without making its output visible,
// the kubelet restarts the driver, and that attempt commits. The output is
// right and its _SUCCESS names the last attempt, not the zombie.
func TestDriverRestartZombie(t *testing.T) {
	env := cluster.Env(t)
	r := startRestartApp(t, env, "RESTARTAPP_SAVE_DELAY=5s")
	r.await(1, "save")
	pod := r.driverPod()
	if err := env.SignalContainer(r.ns, pod, "", syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"1"}}}`, "drover.io/driver-epoch")
	if _, err := env.Client.CoreV1().Pods(r.ns).Patch(t.Context(), pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.SignalContainer(r.ns, pod, "", syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := r.wait(); err != nil {
		t.Fatalf("drover submit: %v, want exit 0", err)
	}
	if !strings.Contains(r.stderr.String(), "driver restarted (attempt 2 of 4): exit 1") {
		t.Errorf("submit did not report the superseded attempt's exit")
	}
	r.checkOutput(2)
	if execs := r.executorCreates(); len(execs) != 4 {
		t.Errorf("executor pods created: %v, want the first attempt's 4 only", execs)
	}
}

// restartRun is one run of testdata/restartapp through drover submit.
type restartRun struct {
	t       testing.TB
	env     *testenv.Env
	ns      string
	store   *testenv.S3
	markers string
	input   string
	stderr  bytes.Buffer
	done    chan error
	pod     string
	start   time.Time
}

// restartOpts change how restartapp runs: Input replaces wordInput;
// Never keeps spark's default restartPolicy, Never; AppEnv are its
// settings (RESTARTAPP_*=…), given to the driver and the executors.
type restartOpts struct {
	Input  string
	Never  bool
	AppEnv []string
}

// startRestartApp submits restartapp with the settings appEnv
// (RESTARTAPP_*=…, to the driver and the executors) in a new namespace,
// saving to s3://out/counts on a server of its own, with its event logs in
// s3://events/.
func startRestartApp(t testing.TB, env *testenv.Env, appEnv ...string) *restartRun {
	return startRestart(t, env, restartOpts{AppEnv: appEnv})
}

func startRestart(t testing.TB, env *testenv.Env, o restartOpts) *restartRun {
	drv, _ := binaries(t)
	if o.Input == "" {
		o.Input = wordInput(t)
	}
	r := &restartRun{t: t, env: env, ns: restrictedNamespace(t, env), input: o.Input, markers: t.TempDir(), done: make(chan error, 1)}
	store, err := testenv.StartS3(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Stop() })
	r.store = store
	for _, b := range []string{"out", "events"} {
		if err := store.CreateBucket(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(r.markers, 0o777); err != nil {
		t.Fatal(err)
	}
	policy := "OnFailure"
	if o.Never {
		policy = "Never"
	}
	args := clusterArgs(env, r.ns, "--name", "restart", "--num-executors", "4",
		"--conf", "spark.kubernetes.driver.restartPolicy="+policy,
		"--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.dir=s3://events/",
		"--conf", "spark.eventLog.compress=false")
	for _, kv := range append(o.AppEnv, "RESTARTAPP_MARKER_DIR="+r.markers) {
		args = append(args, "--conf", "spark.kubernetes.driverEnv."+kv, "--conf", "spark.executorEnv."+kv)
	}
	for _, kv := range store.Conf() {
		args = append(args, "--conf", kv)
	}
	for _, kv := range store.Env() {
		args = append(args, "--conf", "spark.executorEnv."+kv)
	}
	args = append(args, "local://"+filepath.Join(filepath.Dir(drv), "restartapp"), r.input, "s3://out/counts")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, drv, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	cmd.Stdout, cmd.Stderr = io.Discard, &r.stderr
	r.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- cmd.Wait() }()
	return r
}

// await waits until attempt of the driver reaches marker ("save",
// "sortmap", "saved": restartapp's markers, which name the attempt).
func (r *restartRun) await(attempt int, marker string) {
	r.t.Helper()
	pattern := filepath.Join(r.markers, fmt.Sprintf("%s-%d", marker, attempt))
	if marker != "saved" {
		pattern += "-*"
	}
	if !poll(2*time.Minute, 50*time.Millisecond, func() bool {
		m, _ := filepath.Glob(pattern)
		return len(m) > 0
	}) {
		r.t.Fatalf("attempt %d did not reach %s", attempt, marker)
	}
}

// driverPod is the application's driver pod.
func (r *restartRun) driverPod() string {
	r.t.Helper()
	if r.pod == "" {
		r.pod = onlyDriverPod(r.t, r.env, r.ns)
	}
	return r.pod
}

// onlyDriverPod is the name of the one driver pod in ns.
func onlyDriverPod(t testing.TB, env *testenv.Env, ns string) string {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=driver"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("driver pods: %v, %v", pods, err)
	}
	return pods.Items[0].Name
}

// wait returns drover submit's end, once it exited.
func (r *restartRun) wait() error {
	err := <-r.done
	r.t.Logf("drover submit:\n%s", r.stderr.String())
	return err
}

// executorCreates are the executor pods the drivers created.
func (r *restartRun) executorCreates() []string {
	r.t.Helper()
	creates, err := r.env.PodCreates("drover-driver/")
	if err != nil {
		r.t.Fatal(err)
	}
	var execs []string
	for _, c := range creates {
		if c.Namespace == r.ns && c.Code == 201 {
			execs = append(execs, c.Name)
		}
	}
	return execs
}

// checkOutput checks the saved output is what a run without a crash saves
// and that its _SUCCESS names the attempt (epoch) that committed it.
func (r *restartRun) checkOutput(committedBy int) {
	r.t.Helper()
	if diff := compareLines(wantCounts(r.t, r.input), savedLines(r.t, r.store, "out", "counts/")); diff != "" {
		r.t.Errorf("output (-want +got):\n%s", diff)
	}
	obj, err := r.store.Client().GetObject(r.t.Context(), &s3.GetObjectInput{Bucket: aws.String("out"), Key: aws.String("counts/_SUCCESS")})
	if err != nil {
		r.t.Fatal(err)
	}
	defer obj.Body.Close()
	var marker struct{ Attempt int }
	if err := json.NewDecoder(obj.Body).Decode(&marker); err != nil {
		r.t.Fatalf("_SUCCESS: %v", err)
	}
	if marker.Attempt != committedBy {
		r.t.Errorf("_SUCCESS names attempt (epoch) %d, want %d", marker.Attempt, committedBy)
	}
}

// checkOutOfRestarts checks an application whose driver failed more often
// than it may restart: submit failed with the cause, the driver pod failed
// for good, and no executor pod is left.
func checkOutOfRestarts(t *testing.T, env *testenv.Env, ns, driverPod string, submitErr error, stderr string) {
	t.Helper()
	if submitErr == nil {
		t.Error("drover submit exited 0 for an application out of restarts")
	}
	const cause = "the driver failed 4 times; the last attempt (4 of 4): exit 137"
	if !strings.Contains(stderr, cause) {
		t.Errorf("submit's output lacks %q", cause)
	}
	pod, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), driverPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodFailed {
		t.Errorf("driver pod %s, want Failed", pod.Status.Phase)
	}
	var left []corev1.Pod
	gone := poll(time.Minute, 200*time.Millisecond, func() bool {
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=executor"})
		if err == nil {
			left = pods.Items
		}
		return err == nil && len(pods.Items) == 0
	})
	if !gone {
		for _, p := range left {
			t.Errorf("executor pod %s left: %s, deleted %v, %+v", p.Name, p.Status.Phase, p.DeletionTimestamp, p.Status.ContainerStatuses)
		}
	}
}

// mapTasks counts the tasks the restarted driver (attempt 2) ran, by map
// stage name ("… → shuffle N"), from its event log in bucket.
func mapTasks(t *testing.T, store *testenv.S3, bucket string) map[string]int {
	t.Helper()
	list, err := store.Client().ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var key string
	for _, o := range list.Contents {
		if strings.HasSuffix(aws.ToString(o.Key), "_2") {
			key = aws.ToString(o.Key)
		}
	}
	if key == "" {
		t.Fatalf("no event log of attempt 2 in %s: %d objects", bucket, len(list.Contents))
	}
	obj, err := store.Client().GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	names := map[int]string{}
	out := map[string]int{}
	dec := json.NewDecoder(obj.Body)
	for {
		var e struct {
			Event   string
			StageID int
			Name    string
		}
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("event log %s: %v", key, err)
		}
		switch e.Event {
		case "StageSubmitted":
			names[e.StageID] = e.Name
		case "TaskEnd":
			if n := names[e.StageID]; strings.Contains(n, "→ shuffle") {
				out[n]++
			}
		}
	}
	return out
}

// wantCounts is "word\tcount" for each word of the file at path, sorted
// by word: what the application saves.
func wantCounts(t testing.TB, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, w := range strings.Fields(string(b)) {
		counts[w]++
	}
	var out []string
	for w, n := range counts {
		out = append(out, fmt.Sprintf("%s\t%d", w, n))
	}
	slices.SortFunc(out, func(a, b string) int {
		return strings.Compare(strings.SplitN(a, "\t", 2)[0], strings.SplitN(b, "\t", 2)[0])
	})
	return out
}

// savedLines reads the part files under prefix of bucket, in order.
func savedLines(t testing.TB, store *testenv.S3, bucket, prefix string) []string {
	list, err := store.Client().ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		if strings.Contains(aws.ToString(o.Key), "part-") {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	slices.Sort(keys)
	var lines []string
	for _, k := range keys {
		obj, err := store.Client().GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	return lines
}

func compareLines(want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	return fmt.Sprintf("-%s\n+%s", strings.Join(want, " | "), strings.Join(got, " | "))
}

// BenchmarkDriverRestart is the price of a driver crash with
// spark.kubernetes.driver.restartPolicy=OnFailure: restartapp (read →
// reduceByKey → sortByKey → save to s3://) on DROVER_RESTART_BENCH_MB
// (default 256) MiB of text and 4 executors, run in turns fault-free and
// with its driver SIGKILLed once the sort's map stage is done, each until
// drover submit exits. crash/fault-free is their ratio with the back-off
// the kubelet imposed before the restart (backoff-s, from the pod's
// container status, to the second) taken out. For comparison, what
// spark-operator's restartPolicy does: the same crash with
// restartPolicy=Never, then the application submitted again from zero
// (resubmit-s-to-result, from the first submission until the second
// exits). restart-s is what the crash itself costs: the time from the kill
// to the result, less the fault-free run's time from the same point (its
// save stage's start) to its result.
func BenchmarkDriverRestart(b *testing.B) {
	env := cluster.Env(b)
	mib := 256
	if v, err := strconv.Atoi(os.Getenv("DROVER_RESTART_BENCH_MB")); err == nil && v > 0 {
		mib = v
	}
	input := textInput(b, mib<<20)
	var faultFree, crash, backoff, resubmit, overhead time.Duration
	runs := 0
	for b.Loop() {
		r := startRestart(b, env, restartOpts{Input: input})
		saveStarted := r.markerTime("save-1-")
		if err := r.wait(); err != nil {
			b.Fatalf("fault-free run: %v", err)
		}
		faultFree += time.Since(r.start)
		tail := time.Since(<-saveStarted) // from the point the crash run is killed at

		r = startRestart(b, env, restartOpts{Input: input})
		r.await(1, "save")
		if err := env.SignalContainer(r.ns, r.driverPod(), "", syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		killed := time.Now()
		if err := r.wait(); err != nil {
			b.Fatalf("run with a crash: %v", err)
		}
		crash += time.Since(r.start)
		backoff += r.backoff()
		overhead += time.Since(killed) - tail
		if os.Getenv("DROVER_RESTART_BENCH_LOGS") != "" {
			// Where the crash's time goes: the driver's log, both attempts.
			logs, _ := env.ProcessNode.Logs(r.ns, r.driverPod())
			b.Logf("started %s, killed %s; the driver's log:\n%s", r.start.Format(time.StampMilli), killed.Format(time.StampMilli), logs)
		}

		r = startRestart(b, env, restartOpts{Input: input, Never: true})
		r.await(1, "save")
		if err := env.SignalContainer(r.ns, r.driverPod(), "", syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		if err := r.wait(); err == nil {
			b.Fatal("drover submit exited 0 for a killed driver that may not restart")
		}
		again := startRestart(b, env, restartOpts{Input: input, Never: true})
		if err := again.wait(); err != nil {
			b.Fatalf("resubmitted run: %v", err)
		}
		resubmit += time.Since(r.start)
		b.Logf("run %d (means so far): fault-free %.2f s, crash %.2f s (back-off %.0f s, restart %.2f s), resubmitted %.2f s", runs,
			faultFree.Seconds()/float64(runs+1), crash.Seconds()/float64(runs+1), backoff.Seconds()/float64(runs+1),
			overhead.Seconds()/float64(runs+1), resubmit.Seconds()/float64(runs+1))
		runs++
	}
	n := float64(runs)
	b.ReportMetric(faultFree.Seconds()/n, "s-to-result")
	b.ReportMetric(crash.Seconds()/n, "crash-s-to-result")
	b.ReportMetric(backoff.Seconds()/n, "backoff-s")
	b.ReportMetric(overhead.Seconds()/n, "restart-s")
	b.ReportMetric((crash-backoff).Seconds()/faultFree.Seconds(), "crash/fault-free")
	b.ReportMetric(resubmit.Seconds()/n, "resubmit-s-to-result")
	b.ReportMetric(resubmit.Seconds()/faultFree.Seconds(), "resubmit/fault-free")
}

// markerTime sends when a marker starting with prefix first appears (the
// zero time if none does within the run's 5 minutes).
func (r *restartRun) markerTime(prefix string) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		var t time.Time
		poll(5*time.Minute, 10*time.Millisecond, func() bool {
			m, _ := filepath.Glob(filepath.Join(r.markers, prefix+"*"))
			if len(m) > 0 {
				t = time.Now()
			}
			return len(m) > 0
		})
		at <- t
	}()
	return at
}

// backoff is how long the driver container waited between its first run's
// end and its second run's start (second resolution, as the API has it).
func (r *restartRun) backoff() time.Duration {
	r.t.Helper()
	pod, err := r.env.Client.CoreV1().Pods(r.ns).Get(r.t.Context(), r.driverPod(), metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, st := range pod.Status.ContainerStatuses {
		last, now := st.LastTerminationState.Terminated, st.State.Terminated
		if last != nil && now != nil {
			return now.StartedAt.Sub(last.FinishedAt.Time)
		}
	}
	r.t.Fatalf("driver pod %s: no restart in its container statuses", pod.Name)
	return 0
}

// textInput writes about size bytes of text drawn from 20,000 words, the
// same for every call with a size.
func textInput(b testing.TB, size int) string {
	path := filepath.Join(b.TempDir(), "text.txt")
	var text bytes.Buffer
	rng := rand.New(rand.NewPCG(1, uint64(size)))
	for text.Len() < size {
		for i := range 12 {
			if i > 0 {
				text.WriteByte(' ')
			}
			fmt.Fprintf(&text, "w%d", rng.IntN(20000))
		}
		text.WriteByte('\n')
	}
	if err := os.WriteFile(path, text.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}
