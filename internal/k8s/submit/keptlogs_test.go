//go:build integration

package submit_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// The kept-log tests (issue 41): every process of a cluster-mode
// application keeps its output in spark.driver.log.dfsDir (here s3://), so
// it outlives the pod. testdata/logapp's map tasks print a marker line
// every 100 ms, with the time it was printed and a sequence number per
// process, so that a test sees what a kept log lost and when it was
// written. What each process wrote is its log on the process node
// (env.ProcessNode.Logs: the container's stdout and stderr, in one file,
// kept after the pod is deleted), which a kept log is compared with byte
// for byte.

// keptLogBucket is where the tests keep the logs: s3://<keptLogBucket>/logs.
const keptLogBucket = "drover"

// TestKeptLogsClusterWordCount: a cluster-mode word count to s3:// with
// spark.driver.log.persistToDfs.enabled, 4 executors, one SIGKILLed while
// its map task prints markers, another's pod deleted through the API right
// after. The kill comes when the victim holds the most unshipped output: an
// executor ships its log every 5 s from its registration (the "registered
// with driver" line's time), and it dies 9.5 s after it, half a second
// before its second shipment, so that 4.5 s of its output are lost.
//
// The application succeeds with the right counts and its executor pods
// are deleted at the end (deleteOnTermination, the default). Then, from
// the store alone: the driver pod's name leads to the application; every
// executor ever created has a kept log; the driver's and every
// executor's but the killed one's are what the process wrote, byte for
// byte, and end with the end mark (the deleted one's through SIGTERM); the
// killed one's is a prefix of what it wrote, holding every marker printed
// up to 5 s before the kill. drover history links every process's kept
// log (REST API and Executors page) and serves its bytes; drover logs
// prints the killed and the deleted executors' kept logs, then, once the
// driver pod is deleted too, the driver's, saying the pod is gone.
func TestKeptLogsClusterWordCount(t *testing.T) {
	env := cluster.Env(t)
	store := startKeptLogStore(t)
	input, want := logAppInput(t, 16)
	r := startLogApp(t, env, store, logAppOpts{executors: 4, input: input, output: "s3://out/counts",
		endpoint: store.Endpoint, events: true})

	victim := r.awaitTalker(time.Second)
	registered := r.registeredAt(victim)
	time.Sleep(time.Until(registered.Add(9500 * time.Millisecond)))
	if ms := parseLogMarkers(t, r.podLog(victim)); len(ms) == 0 || time.Since(ms[len(ms)-1].at) > 500*time.Millisecond {
		t.Fatalf("executor pod %s is not printing markers any more %.1f s after it registered: the test struck too late",
			victim, time.Since(registered).Seconds())
	}
	if err := env.SignalContainer(r.ns, victim, "", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("SIGKILLed executor pod %s at %s, %.3f s after it registered at %s", victim, killed.Format(time.StampMilli),
		killed.Sub(registered).Seconds(), registered.Format(time.StampMilli))
	deleted := r.awaitTalker(0, victim)
	if err := env.Client.CoreV1().Pods(r.ns).Delete(t.Context(), deleted, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted executor pod %s at %s", deleted, time.Now().Format(time.StampMilli))

	if err := r.wait(); err != nil {
		t.Fatalf("drover submit: %v, want exit 0", err)
	}
	if diff := compareLines(want, sortedCopy(savedLines(t, store, "out", "counts/"))); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	r.awaitNoExecutors()

	sink := keptLogSink(t, store, store.Endpoint)
	appID := r.appID(sink)
	execs := r.executorPods()
	r.checkProcesses(sink, appID, execs)

	driver := keptlog.Process{AppID: appID, Executor: executorid.Driver, Attempt: 1}
	r.checkWhole(sink, driver, r.driverPod())
	if kept, wrote := r.readKept(sink, driver), r.podLog(r.driverPod()); !bytes.Contains(kept, []byte("logapp: job took")) {
		t.Errorf("the driver's kept log lacks what it printed on stdout (logapp: job took …); it wrote %d bytes, %d kept", len(wrote), len(kept))
	}
	for pod, id := range execs {
		p := keptlog.Process{AppID: appID, Executor: id, Attempt: 1}
		if pod == victim {
			continue
		}
		r.checkWhole(sink, p, pod)
	}

	// The killed executor: what was kept is what it wrote, up to at
	// most 5 s before it died.
	p := keptlog.Process{AppID: appID, Executor: execs[victim], Attempt: 1}
	kept, wrote := r.readKept(sink, p), r.podLog(victim)
	if !bytes.HasPrefix(wrote, kept) {
		t.Errorf("the kept log of killed %s (%d bytes) is not a prefix of what it wrote (%d bytes); they differ from byte %d",
			p, len(kept), len(wrote), samePrefixLen(kept, wrote))
	}
	keptMarks, wroteMarks := parseLogMarkers(t, kept), parseLogMarkers(t, wrote)
	if len(keptMarks) == 0 {
		t.Fatalf("the kept log of killed %s has no marker; it wrote %d in %s", p, len(wroteMarks), logMarkerSpan(wroteMarks))
	}
	last := keptMarks[len(keptMarks)-1]
	t.Logf("killed %s: wrote %d markers (%s), %d kept; the last kept one was printed %.3f s before the kill (%d bytes of %d kept)",
		p, len(wroteMarks), logMarkerSpan(wroteMarks), len(keptMarks), killed.Sub(last.at).Seconds(), len(kept), len(wrote))
	for _, m := range wroteMarks {
		if !m.at.After(killed.Add(-5*time.Second)) && m.seq > last.seq {
			t.Errorf("killed %s lost marker seq=%d, printed %.3f s before the kill (at most the last 5 s may be lost); the last kept is seq=%d, %.3f s before",
				p, m.seq, killed.Sub(m.at).Seconds(), last.seq, killed.Sub(last.at).Seconds())
			break
		}
	}
	if r.closedMark(sink, p) {
		t.Errorf("the kept log of SIGKILLed %s ends with the end mark, which only Close writes", p)
	}

	r.checkHistoryLinks(sink, appID, execs)
	r.checkDroverLogs(sink, appID, execs, victim, deleted)
}

// TestKeptLogsStoreOutage: the store that keeps the logs is down for 10 s
// while the job's map tasks run (a proxy in front of the S3 server refuses
// connections and cuts those open, as a stopped server would). It goes down
// once an executor has printed markers for 5.5 s, so that the executors
// (which register together) have shipped their first chunk, 5 s after
// registering, and hold what they printed since; it comes back before the
// map stage (18 tasks of 3 s on 3 executors) ends. Every
// executor notices (its log says shipping failed, then that it ships again)
// and nothing is lost: every process's kept log is what it wrote, byte for
// byte, and in particular holds every marker printed before the outage. The
// job takes about as long as the same job without the outage (a baseline
// run just before). The job saves to a local directory, so that the store
// serves the logs alone and the difference is what the logs cost the job.
func TestKeptLogsStoreOutage(t *testing.T) {
	env := cluster.Env(t)
	store := startKeptLogStore(t)
	proxy := startCutProxy(t, strings.TrimPrefix(store.Endpoint, "http://"))
	input, want := logAppInput(t, 18)
	outDir := t.TempDir()
	if err := os.Chmod(outDir, 0o777); err != nil {
		t.Fatal(err)
	}
	opts := logAppOpts{executors: 3, input: input, endpoint: "http://" + proxy.addr}

	opts.output = filepath.Join(outDir, "baseline")
	base := startLogApp(t, env, store, opts)
	if err := base.wait(); err != nil {
		t.Fatalf("baseline: drover submit: %v, want exit 0", err)
	}
	baseJob, baseTotal := base.jobTime(), base.elapsed

	opts.output = filepath.Join(outDir, "outage")
	r := startLogApp(t, env, store, opts)
	r.awaitTalker(5500 * time.Millisecond)
	proxy.cut()
	down := time.Now()
	t.Logf("the store is down from %s", down.Format(time.StampMilli))
	select {
	case <-time.After(10 * time.Second):
	case <-r.ended:
		t.Errorf("the job ended within the outage: it should outlast it")
	}
	proxy.restore()
	t.Logf("the store is up again after %.1f s", time.Since(down).Seconds())
	if err := r.wait(); err != nil {
		t.Fatalf("drover submit: %v, want exit 0", err)
	}
	job, total := r.jobTime(), r.elapsed
	t.Logf("job time: baseline %.2f s, with a 10 s store outage %.2f s; drover submit: baseline %.2f s, with the outage %.2f s",
		baseJob.Seconds(), job.Seconds(), baseTotal.Seconds(), total.Seconds())
	for _, run := range []struct {
		name string
		dir  string
	}{{"baseline", "baseline"}, {"outage", "outage"}} {
		if diff := compareLines(want, sortedCopy(localPartLines(t, filepath.Join(outDir, run.dir)))); diff != "" {
			t.Errorf("%s output (-want +got):\n%s", run.name, diff)
		}
	}
	// A generous bound, for noise on a busy 2-core machine: the outage
	// must not hold the job up (a writer that waited for the store would
	// add the outage's 10 s and more), but one run may be a little slower
	// than another.
	if limit := baseJob*3/2 + 2*time.Second; job > limit {
		t.Errorf("the job took %.2f s with the outage, %.2f s without: more than 1.5× + 2 s", job.Seconds(), baseJob.Seconds())
	}
	if limit := baseTotal*3/2 + 2*time.Second; total > limit {
		t.Errorf("drover submit took %.2f s with the outage, %.2f s without: more than 1.5× + 2 s", total.Seconds(), baseTotal.Seconds())
	}

	r.awaitNoExecutors()
	sink := keptLogSink(t, store, store.Endpoint)
	appID := r.appID(sink)
	execs := r.executorPods()
	r.checkProcesses(sink, appID, execs)
	procs := map[keptlog.Process]string{{AppID: appID, Executor: executorid.Driver, Attempt: 1}: r.driverPod()}
	for pod, id := range execs {
		procs[keptlog.Process{AppID: appID, Executor: id, Attempt: 1}] = pod
	}
	before := 0
	for p, pod := range procs {
		kept, wrote := r.readKept(sink, p), r.podLog(pod)
		// An executor has output to ship throughout the outage; the
		// driver, quiet while its job runs, may have none.
		for _, want := range []string{"kept log: shipping failed", "kept log: shipping again"} {
			if !bytes.Contains(wrote, []byte(want)) && p.Executor != executorid.Driver {
				t.Errorf("%s did not log %q: the outage passed it by", p, want)
			}
		}
		// Every marker printed before the outage is kept, and all
		// after it (the check below is stricter: all the bytes).
		keptSeqs := map[int]bool{}
		for _, m := range parseLogMarkers(t, kept) {
			keptSeqs[m.seq] = true
		}
		for _, m := range parseLogMarkers(t, wrote) {
			if m.at.Before(down) {
				before++
				if !keptSeqs[m.seq] {
					t.Errorf("%s lost marker seq=%d, printed %.3f s before the outage", p, m.seq, down.Sub(m.at).Seconds())
				}
			}
		}
		r.checkWhole(sink, p, pod)
	}
	if before == 0 {
		t.Error("no marker was printed before the outage: the test struck too early")
	}
	t.Logf("%d markers printed before the outage, all kept", before)
}

// logAppOpts say how startLogApp runs logapp.
type logAppOpts struct {
	executors int
	input     string // a directory: a map task a file
	output    string
	// endpoint is the S3 endpoint the application uses (the server's, or
	// a proxy in front of it).
	endpoint string
	// events: write event logs to s3://events/ (for drover history).
	events bool
}

// logRun is one run of testdata/logapp through drover submit.
type logRun struct {
	t       *testing.T
	env     *testenv.Env
	ns      string
	store   *testenv.S3
	opts    logAppOpts
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	ended   chan struct{}
	err     error
	start   time.Time
	elapsed time.Duration
	pod     string
}

// startKeptLogStore starts an S3 server with the buckets the tests use:
// out (output), events (event logs) and keptLogBucket.
func startKeptLogStore(t *testing.T) *testenv.S3 {
	store, err := testenv.StartS3(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Stop() })
	for _, b := range []string{"out", "events", keptLogBucket} {
		if err := store.CreateBucket(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// logAppInput writes files text files into a new directory and returns it
// with the counts logapp saves, sorted.
func logAppInput(t *testing.T, files int) (string, []string) {
	dir := t.TempDir()
	counts := map[string]int{}
	for i := range files {
		var text strings.Builder
		for j := range 50 {
			line := fmt.Sprintf("the quick brown fox %d jumps over the lazy dog f%d\n", j%7, i)
			text.WriteString(line)
			for _, w := range strings.Fields(line) {
				counts[w]++
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%02d.txt", i)), []byte(text.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for w, n := range counts {
		want = append(want, fmt.Sprintf("%s\t%d", w, n))
	}
	slices.Sort(want)
	return dir, want
}

// startLogApp submits logapp in a new namespace, keeping its logs in
// s3://keptLogBucket/logs, and returns at once.
func startLogApp(t *testing.T, env *testenv.Env, store *testenv.S3, o logAppOpts) *logRun {
	drv, _ := binaries(t)
	r := &logRun{t: t, env: env, ns: restrictedNamespace(t, env), store: store, opts: o, ended: make(chan struct{})}
	args := clusterArgs(env, r.ns, "--name", "logs", "--num-executors", strconv.Itoa(o.executors),
		"--conf", "spark.driver.log.persistToDfs.enabled=true",
		"--conf", "spark.driver.log.dfsDir=s3://"+keptLogBucket+"/logs",
		"--conf", "spark.executorEnv.LOGAPP_TASK_TIME=3s")
	if o.events {
		args = append(args, "--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.dir=s3://events/")
	}
	for _, kv := range store.Conf() {
		if k, _, _ := strings.Cut(kv, "="); k == "spark.hadoop.fs.s3a.endpoint" {
			kv = k + "=" + o.endpoint
		}
		args = append(args, "--conf", kv)
	}
	for _, kv := range store.Env() {
		args = append(args, "--conf", "spark.executorEnv."+kv)
	}
	args = append(args, "local://"+filepath.Join(filepath.Dir(drv), "logapp"), o.input, o.output)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	cmd := exec.CommandContext(ctx, drv, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
	r.start = time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer cancel()
		r.err = cmd.Wait()
		r.elapsed = time.Since(r.start)
		close(r.ended)
	}()
	t.Cleanup(func() { cancel(); <-r.ended })
	return r
}

// wait returns drover submit's end, once it exited.
func (r *logRun) wait() error {
	<-r.ended
	r.t.Logf("drover submit (%.2f s):\n%s", r.elapsed.Seconds(), r.stderr.String())
	return r.err
}

var jobTookRE = regexp.MustCompile(`logapp: job took ([0-9.]+) s`)

// jobTime is the job's time as the driver printed it.
func (r *logRun) jobTime() time.Duration {
	r.t.Helper()
	m := jobTookRE.FindSubmatch(r.podLog(r.driverPod()))
	if m == nil {
		r.t.Fatalf("the driver did not print its job's time")
	}
	s, _ := strconv.ParseFloat(string(m[1]), 64)
	return time.Duration(s * float64(time.Second))
}

// driverPod is the application's driver pod.
func (r *logRun) driverPod() string {
	r.t.Helper()
	if r.pod == "" {
		r.pod = onlyDriverPod(r.t, r.env, r.ns)
	}
	return r.pod
}

// podLog is what the process of pod wrote (its stdout and stderr), as
// the process node keeps it, also after the pod is deleted.
func (r *logRun) podLog(pod string) []byte {
	r.t.Helper()
	b, err := r.env.ProcessNode.Logs(r.ns, pod)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// awaitTalker waits until an executor pod other than those of not, still
// running, has printed markers for at least span (its first to its last)
// and printed one in the last half second, and returns its name.
func (r *logRun) awaitTalker(span time.Duration, not ...string) string {
	r.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-r.ended:
			r.wait()
			r.t.Fatalf("the application ended before an executor printed markers for %s", span)
		default:
		}
		pods, err := r.env.Client.CoreV1().Pods(r.ns).List(r.t.Context(), metav1.ListOptions{LabelSelector: "spark-role=executor"})
		if err != nil {
			r.t.Fatal(err)
		}
		for _, p := range pods.Items {
			if slices.Contains(not, p.Name) || p.DeletionTimestamp != nil || p.Status.Phase != "Running" {
				continue
			}
			b, err := r.env.ProcessNode.Logs(r.ns, p.Name)
			if err != nil {
				continue
			}
			ms := parseLogMarkers(r.t, b)
			if len(ms) > 0 && ms[len(ms)-1].at.Sub(ms[0].at) >= span && time.Since(ms[len(ms)-1].at) < 500*time.Millisecond {
				return p.Name
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.t.Fatalf("no executor printed markers for %s within 2 minutes", span)
	return ""
}

var registeredRE = regexp.MustCompile(`(?m)^time=(\S+) level=INFO msg="registered with driver"`)

// registeredAt is when the executor of pod registered with the driver, by
// its log: when it starts shipping its kept log.
func (r *logRun) registeredAt(pod string) time.Time {
	r.t.Helper()
	m := registeredRE.FindSubmatch(r.podLog(pod))
	if m == nil {
		r.t.Fatalf("executor pod %s logged no registration", pod)
	}
	at, err := time.Parse(time.RFC3339Nano, string(m[1]))
	if err != nil {
		r.t.Fatalf("executor pod %s: registration time %q: %v", pod, m[1], err)
	}
	return at
}

// awaitNoExecutors waits until the application's executor pods are
// deleted (spark.kubernetes.executor.deleteOnTermination, the default).
func (r *logRun) awaitNoExecutors() {
	r.t.Helper()
	var left []string
	if !poll(time.Minute, 200*time.Millisecond, func() bool {
		pods, err := r.env.Client.CoreV1().Pods(r.ns).List(r.t.Context(), metav1.ListOptions{LabelSelector: "spark-role=executor"})
		left = nil
		if err != nil {
			return false
		}
		for _, p := range pods.Items {
			left = append(left, p.Name)
		}
		return len(left) == 0
	}) {
		r.t.Fatalf("executor pods left a minute after the end: %v", left)
	}
}

// executorPods are the executor pods the driver created, with their
// executor ids (<prefix>-exec-<id>), from the API server's audit log.
func (r *logRun) executorPods() map[string]executorid.ID {
	r.t.Helper()
	creates, err := r.env.PodCreates("drover-driver/")
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]executorid.ID{}
	for _, c := range creates {
		if c.Namespace != r.ns || c.Code != 201 {
			continue
		}
		i := strings.LastIndex(c.Name, "-exec-")
		id, err := executorid.Parse(c.Name[i+len("-exec-"):])
		if i < 0 || err != nil {
			r.t.Fatalf("executor pod %s: no executor id in its name", c.Name)
		}
		out[c.Name] = id
	}
	if len(out) < r.opts.executors {
		r.t.Fatalf("executor pods created: %v, want at least %d", out, r.opts.executors)
	}
	r.t.Logf("executor pods created: %v", out)
	return out
}

// keptLogSink is the tests' kept-log directory, reached at endpoint.
func keptLogSink(t *testing.T, store *testenv.S3, endpoint string) keptlog.Sink {
	t.Helper()
	sink, err := keptlog.OpenSink("s3://"+keptLogBucket+"/logs", objstore.Config{Endpoint: endpoint, PathStyle: true,
		Region: store.Region, AccessKey: store.AccessKey, SecretKey: store.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	return sink
}

// appID is the application the driver pod ran, as the kept logs record
// it, checked against the pod's label.
func (r *logRun) appID(sink keptlog.Sink) string {
	r.t.Helper()
	appID, err := keptlog.AppOfPod(r.t.Context(), sink, r.ns, r.driverPod())
	if err != nil {
		r.t.Fatal(err)
	}
	pod, err := r.env.Client.CoreV1().Pods(r.ns).Get(r.t.Context(), r.driverPod(), metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	if label := pod.Labels["spark-app-selector"]; label != appID {
		r.t.Errorf("the kept logs say driver pod %s ran %s; its label says %s", r.driverPod(), appID, label)
	}
	return appID
}

// checkProcesses checks that the kept logs list the driver's first attempt
// and every executor created, and nothing else.
func (r *logRun) checkProcesses(sink keptlog.Sink, appID string, execs map[string]executorid.ID) {
	r.t.Helper()
	procs, err := keptlog.Processes(r.t.Context(), sink, appID)
	if err != nil {
		r.t.Fatal(err)
	}
	want := []keptlog.Process{{AppID: appID, Executor: executorid.Driver, Attempt: 1}}
	for _, id := range execs {
		want = append(want, keptlog.Process{AppID: appID, Executor: id, Attempt: 1})
	}
	slices.SortFunc(want, func(a, b keptlog.Process) int { return cmp.Compare(a.Executor, b.Executor) })
	if !slices.Equal(procs, want) {
		r.t.Errorf("kept logs of %s: %v, want %v", appID, procs, want)
	}
}

// readKept reads p's kept log whole.
func (r *logRun) readKept(sink keptlog.Sink, p keptlog.Process) []byte {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 30*time.Second)
	defer cancel()
	rd, err := keptlog.Open(ctx, sink, p, keptlog.ReadOptions{Tail: keptlog.AllLines})
	if err != nil {
		r.t.Fatalf("opening the kept log of %s: %v", p, err)
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		r.t.Fatalf("reading the kept log of %s: %v", p, err)
	}
	return b
}

// closedMark reports whether p's kept log ends with Close's end mark: a
// reader following it then stops by itself.
func (r *logRun) closedMark(sink keptlog.Sink, p keptlog.Process) bool {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 3*time.Second)
	defer cancel()
	rd, err := keptlog.Open(ctx, sink, p, keptlog.ReadOptions{Tail: keptlog.AllLines, Follow: true, Poll: 200 * time.Millisecond})
	if err != nil {
		r.t.Fatalf("opening the kept log of %s: %v", p, err)
	}
	defer rd.Close()
	_, err = io.ReadAll(rd)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		r.t.Fatalf("following the kept log of %s: %v", p, err)
	}
	return err == nil
}

// checkWhole checks that p's kept log is what the process of pod wrote,
// byte for byte, and ends with the end mark. Only what the kept log's own
// writer logs while it ships the last chunk (lines with keptlog=, such as
// "kept log: shipping again" when the store came back since the last
// shipment) may follow in the pod's log: it is written after the capture
// of the process's output ended (keptlog.Keeper.Close), so no kept log
// can hold it.
func (r *logRun) checkWhole(sink keptlog.Sink, p keptlog.Process, pod string) {
	r.t.Helper()
	kept, wrote := r.readKept(sink, p), r.podLog(pod)
	if !bytes.HasPrefix(wrote, kept) {
		i := samePrefixLen(kept, wrote)
		r.t.Errorf("the kept log of %s (pod %s, %d bytes) is not what it wrote (%d bytes): they differ from byte %d:\nkept:  %q\nwrote: %q",
			p, pod, len(kept), len(wrote), i, byteExcerpt(kept, i), byteExcerpt(wrote, i))
	} else if rest := wrote[len(kept):]; len(rest) > 0 {
		for l := range strings.Lines(string(rest)) {
			if !strings.Contains(l, " keptlog=") {
				r.t.Errorf("the kept log of %s (pod %s) lacks the end of what it wrote, from byte %d of %d: %q",
					p, pod, len(kept), len(wrote), rest)
				break
			}
		}
		r.t.Logf("%s wrote, after its kept log's end, what its writer logged while it shipped the last chunk: %q", p, rest)
	}
	if !r.closedMark(sink, p) {
		r.t.Errorf("the kept log of %s (pod %s) does not end with the end mark: Close was not shipped", p, pod)
	}
	r.t.Logf("%s (pod %s): %d bytes kept, %d markers", p, pod, len(kept), len(parseLogMarkers(r.t, kept)))
}

func samePrefixLen(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// byteExcerpt is b around i.
func byteExcerpt(b []byte, i int) []byte {
	return b[max(0, i-80):min(len(b), i+160)]
}

// logMarker is a logapp marker line.
type logMarker struct {
	executor string
	task     int64
	seq      int
	at       time.Time
}

var logMarkerRE = regexp.MustCompile(`(?m)^logapp marker executor=(\d+) task=(\d+) seq=(\d+) time=(\S+)$`)

// parseLogMarkers returns the marker lines of a log, in order. A line cut
// short (the end of a log) is not matched.
func parseLogMarkers(t testing.TB, log []byte) []logMarker {
	var out []logMarker
	for _, m := range logMarkerRE.FindAllSubmatch(log, -1) {
		task, _ := strconv.ParseInt(string(m[2]), 10, 64)
		seq, _ := strconv.Atoi(string(m[3]))
		at, err := time.Parse(time.RFC3339Nano, string(m[4]))
		if err != nil {
			t.Fatalf("marker %q: %v", m[0], err)
		}
		out = append(out, logMarker{executor: string(m[1]), task: task, seq: seq, at: at})
	}
	for i, m := range out {
		if m.seq != i+1 {
			t.Fatalf("marker lines out of sequence: the %d-th is seq=%d", i+1, m.seq)
		}
	}
	return out
}

func logMarkerSpan(ms []logMarker) string {
	if len(ms) == 0 {
		return "none"
	}
	return fmt.Sprintf("%s to %s", ms[0].at.Local().Format(time.StampMilli), ms[len(ms)-1].at.Local().Format(time.StampMilli))
}

func sortedCopy(lines []string) []string {
	lines = slices.Clone(lines)
	slices.Sort(lines)
	return lines
}

// localPartLines reads the part files of a local output directory.
func localPartLines(t *testing.T, dir string) []string {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil || len(parts) == 0 {
		t.Fatalf("no part file in %s: %v", dir, err)
	}
	var lines []string
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.TrimSuffix(string(b), "\n"); s != "" {
			lines = append(lines, strings.Split(s, "\n")...)
		}
	}
	return lines
}

// checkDroverLogs checks drover logs on the application once it ended:
// --executor N of an executor whose pod is gone prints its kept log (the
// killed one's, and the deleted one's), whole and --tail; then, the driver
// pod deleted too (a namespace cleaned), the driver's kept log, by the
// driver pod's name and by the application id, with -f as well (which
// must end: the process has). Each time a line on stderr says the pod is
// gone and where the log is read from, and stdout is the kept bytes.
func (r *logRun) checkDroverLogs(sink keptlog.Sink, appID string, execs map[string]executorid.ID, victim, deleted string) {
	r.t.Helper()
	id := r.ns + ":" + r.driverPod()
	where := " from s3://" + keptLogBucket + "/logs"
	logs := func(args ...string) result {
		r.t.Helper()
		args = append([]string{"logs", "--dir", "s3://" + keptLogBucket + "/logs"}, args...)
		for _, kv := range r.store.Conf() {
			args = append(args, "--conf", kv)
		}
		return drover(r.t, r.env.Kubeconfig, time.Minute, args...)
	}
	check := func(what string, res result, want []byte, notice string) {
		r.t.Helper()
		if res.code != 0 || res.stdout != string(want) || !strings.HasPrefix(res.stderr, notice) ||
			!strings.Contains(res.stderr, where) || strings.Count(res.stderr, "\n") != 1 {
			r.t.Errorf("drover logs, %s: exit %d, stdout of %d bytes (want the %d kept, the same from byte %d), stderr %q (want %q…%s…, one line)",
				what, res.code, len(res.stdout), len(want), samePrefixLen([]byte(res.stdout), want), res.stderr, notice, where)
		}
	}
	for _, pod := range []string{victim, deleted} {
		p := keptlog.Process{AppID: appID, Executor: execs[pod], Attempt: 1}
		kept := r.readKept(sink, p)
		n := execs[pod].String()
		notice := "drover: the pod of executor " + n + " of " + id + " is gone; "
		check("--executor "+n+" (pod "+pod+")", logs("--executor", n, id), kept, notice)
		lines := strings.SplitAfter(string(kept), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		check("--executor "+n+" --tail 3", logs("--executor", n, "--tail", "3", id), []byte(strings.Join(lines[len(lines)-3:], "")), notice)
	}

	driver := keptlog.Process{AppID: appID, Executor: executorid.Driver, Attempt: 1}
	kept := r.readKept(sink, driver)
	if err := r.env.Client.CoreV1().Pods(r.ns).Delete(r.t.Context(), r.driverPod(), metav1.DeleteOptions{}); err != nil {
		r.t.Fatal(err)
	}
	if !poll(time.Minute, 200*time.Millisecond, func() bool {
		_, err := r.env.Client.CoreV1().Pods(r.ns).Get(r.t.Context(), r.driverPod(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) {
		r.t.Fatalf("driver pod %s not gone a minute after its deletion", r.driverPod())
	}
	gone := "drover: pod " + r.ns + "/" + r.driverPod() + " is gone; "
	check("the driver, its pod gone", logs(id), kept, gone)
	check("the driver, its pod gone, -f", logs("-f", id), kept, gone)
	check("the driver by application id", logs(r.ns+":"+appID), kept, "drover: no pod of application "+appID+" is left in namespace "+r.ns+"; ")
	r.t.Logf("drover logs printed the kept logs of the driver (%d bytes) and executors %s and %s", len(kept), execs[victim], execs[deleted])
}

// checkHistoryLinks runs drover history on the application's event log
// (s3://events/, read with the store's settings through --conf, as the
// kept logs) after its pods are gone, and checks that its REST API's
// executorLogs and its Executors page link the kept log of the driver and
// of every executor, and that each link serves that log's bytes.
func (r *logRun) checkHistoryLinks(sink keptlog.Sink, appID string, execs map[string]executorid.ID) {
	r.t.Helper()
	drv, _ := binaries(r.t)
	// The server reads kept logs only from the directories it is given.
	args := []string{"history", "--dir", "s3://events/", "--port", "0", "--conf", "spark.driver.log.dfsDir=s3://" + keptLogBucket + "/logs"}
	for _, kv := range r.store.Conf() {
		args = append(args, "--conf", kv)
	}
	ctx, cancel := context.WithTimeout(r.t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, drv, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		r.t.Fatalf("drover history printed no address: %v; stderr:\n%s", err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	base := strings.Fields(strings.TrimPrefix(line, "History server at "))[0]
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // no idle connection outlives the test
	get := func(path string) []byte {
		r.t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			r.t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			r.t.Fatalf("drover history: GET %s: %s, %v: %s", path, resp.Status, err, b)
		}
		return b
	}

	var listed []struct {
		ID           string
		ExecutorLogs map[string]string
	}
	if err := json.Unmarshal(get("/api/v1/applications/"+appID+"/allexecutors"), &listed); err != nil {
		r.t.Fatal(err)
	}
	links := map[executorid.ID]string{}
	for _, x := range listed {
		id, err := executorid.Parse(x.ID)
		if err != nil {
			r.t.Fatalf("allexecutors lists executor %q", x.ID)
		}
		links[id] = x.ExecutorLogs["log"]
	}
	want := []executorid.ID{executorid.Driver}
	for _, id := range execs {
		want = append(want, id)
	}
	page := string(get("/history/" + appID + "/executors/"))
	for _, id := range want {
		link := links[id]
		if !strings.HasPrefix(link, "/history/"+appID+"/") || !strings.HasSuffix(link, "/logs/executor/"+id.String()) {
			r.t.Errorf("drover history: executor %s's executorLogs %q, want {\"log\": \"/history/%s/…/logs/executor/%s\"}; all: %+v",
				id, link, appID, id, listed)
			continue
		}
		if a := `<a href="` + link + `">`; !strings.Contains(page, a) {
			r.t.Errorf("drover history: the Executors page lacks executor %s's link %s", id, a)
		}
		p := keptlog.Process{AppID: appID, Executor: id, Attempt: 1}
		if got, kept := get(link), r.readKept(sink, p); !bytes.Equal(got, kept) {
			r.t.Errorf("drover history: GET %s: %d bytes, not the %d bytes kept of %s (from byte %d)", link, len(got), len(kept), p, samePrefixLen(got, kept))
		}
	}
	if len(listed) != len(want) {
		r.t.Errorf("drover history lists %d executors (with the driver), want %d: %+v", len(listed), len(want), listed)
	}
	r.t.Logf("drover history links the kept logs of the driver and %d executors: %v", len(want)-1, links)
}

// cutProxy is a TCP proxy in front of the S3 server that the test can cut,
// as if the server were down: new connections are refused, open ones
// closed.
type cutProxy struct {
	t      *testing.T
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{t: t, target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() {
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.pipe(c)
			}()
		}
	}()
}

func (p *cutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *cutProxy) pipe(c net.Conn) {
	defer c.Close()
	if !p.track(c) {
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	if !p.track(up) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// cut stops listening and closes every open connection.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// restore listens again on the same address.
func (p *cutProxy) restore() {
	p.t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("the proxy cannot listen on %s again: %v", p.addr, err)
	}
	p.serve(ln)
}
