//go:build integration

package drover

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/testenv"
)

// The chaos suite (make chaos): faults during a word count on a real control
// plane with a process node. Every scenario checks the answer against a
// reference, that the driver created no pod beyond its target and the
// replacements of executors actually lost (counted by the API server's
// audit log), that nothing of the application is left once it ended, and
// that the log names the cause.

// envChaosDir names the directory where chaos tasks leave a marker when
// their stage starts, so the test strikes in the map or the reduce stage.
const envChaosDir = "DROVER_TEST_CHAOS_DIR"

var (
	chaosWords = RegisterFlatMap("test.chaos.words", func(line string, emit func(KV[string, int])) {
		chaosMark("map")
		time.Sleep(2 * time.Millisecond) // real time: a map task in an executor process lasts, so the chaos lands mid-stage
		for w := range strings.FieldsSeq(line) {
			emit(KV[string, int]{Key: w, Value: 1})
		}
	})
	chaosSlowReduce = RegisterMapPartitions("test.chaos.reduceSide", func(tc *TaskContext, in iter.Seq[KV[string, int]], emit func(KV[string, int])) error {
		chaosMark("reduce")
		select {
		case <-time.After(500 * time.Millisecond):
		case <-tc.Done():
			return tc.Err()
		}
		for kv := range in {
			emit(kv)
		}
		return nil
	})
)

// chaosMark leaves the stage's marker for the test.
func chaosMark(stage string) {
	if dir := os.Getenv(envChaosDir); dir != "" {
		if f, err := os.OpenFile(filepath.Join(dir, stage), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		}
	}
}

// chaosJob is a word count with a slow map stage and a slow reduce side.
type chaosJob struct {
	path   string
	want   map[string]int
	marker string // directory of the stage markers
}

func newChaosJob(t *testing.T) chaosJob {
	lines := generatedLines(3000)
	dir := t.TempDir()
	return chaosJob{path: writeText(t, lines), want: referenceWordCount(lines), marker: dir}
}

// conf is the job's configuration on top of k8sArgs.
func (j chaosJob) conf(executors int, extra ...string) []string {
	return append([]string{"spark.executor.instances=" + strconv.Itoa(executors), "spark.executor.memory=128m",
		"spark.files.maxPartitionBytes=6000", "drover.log.level=info",
		"spark.executorEnv." + envChaosDir + "=" + j.marker}, extra...)
}

func (j chaosJob) run(ctx *Context) (map[string]int, error) {
	counts, err := MapPartitions(ReduceByKey(FlatMap(TextFile(ctx, j.path), chaosWords), testSum, 8), chaosSlowReduce).Collect()
	return mapOf(counts), err
}

// waitMarker waits until a task of stage started.
func (j chaosJob) waitMarker(t *testing.T, stage string) {
	t.Helper()
	if !pollUntil(90*time.Second, 20*time.Millisecond, func() bool {
		_, err := os.Stat(filepath.Join(j.marker, stage))
		return err == nil
	}) {
		t.Errorf("no task of the %s stage started within 90s", stage)
	}
}

// podCreates counts the driver's executor pod creates in ns as the API
// server saw them: stored (201) and every request.
func podCreates(t *testing.T, env *testenv.Env, ns string) (stored int, requests []testenv.PodCreate) {
	t.Helper()
	all, err := env.PodCreates("drover-driver/")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Namespace == ns {
			requests = append(requests, c)
			if c.Code == 201 {
				stored++
			}
		}
	}
	return stored, requests
}

// checkCreates fails t unless the driver created at least want and at most
// want + lost executor pods.
func checkCreates(t *testing.T, env *testenv.Env, ns string, want, lost int) {
	t.Helper()
	stored, reqs := podCreates(t, env, ns)
	t.Logf("executor pods created: %d (target %d, %d lost), %d create requests", stored, want, lost, len(reqs))
	if stored < want || stored > want+lost {
		t.Errorf("%d executor pods created, want between %d and %d (target %d + %d lost): extra pods", stored, want, want+lost, want, lost)
	}
}

// runningExecutorPods lists the executor pods in ns that run.
func runningExecutorPods(t *testing.T, env *testenv.Env, ns string) []corev1.Pod {
	t.Helper()
	pods, _ := appObjects(t, env, ns)
	var out []corev1.Pod
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// appProcesses returns the pids of the live processes of the application
// whose pods are labelled appID (executors carry it in their environment).
func appProcesses(appID string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue // a zombie: ended, not yet reaped
		}
		for kv := range strings.SplitSeq(string(b), "\x00") {
			if kv == envvar.AppID+"="+appID {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// waitNoProcesses fails t if executor processes of appID outlive the
// application by more than a bound.
func waitNoProcesses(t *testing.T, appID string) {
	t.Helper()
	if appID == "" {
		return
	}
	var pids []int
	if !pollUntil(30*time.Second, 100*time.Millisecond, func() bool {
		pids = appProcesses(appID)
		return len(pids) == 0
	}) {
		t.Errorf("executor processes %v of %s still alive 30s after the application ended", pids, appID)
	}
}

// appIDIn is the application id of the executor pods in ns.
func appIDIn(t *testing.T, env *testenv.Env, ns string) string {
	t.Helper()
	pods, _ := appObjects(t, env, ns)
	for _, p := range pods {
		if id := p.Labels["spark-app-selector"]; id != "" {
			return id
		}
	}
	return ""
}

// chaosTarget is the application a fault strikes.
type chaosTarget struct {
	appID, ns string
	job       chaosJob
}

// chaosRun runs the chaos word count as a client-mode driver on env with
// executors executor pods while fault strikes from its own goroutine (it
// gets the application id), then checks the answer, that nothing of the
// application is left, and that the driver created at most executors +
// lost pods. It returns the driver's stderr.
func chaosRun(t *testing.T, env *testenv.Env, executors, lost int, fault func(chaosTarget)) string {
	t.Helper()
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	job := newChaosJob(t)
	var got map[string]int
	var appID string
	code, stderr := runDriverWithin(t, 3*time.Minute, k8sArgs(env, ns, job.conf(executors)...), func(c *Context) error {
		appID = c.AppID()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if fault != nil {
				fault(chaosTarget{appID: appID, ns: ns, job: job})
			}
		}()
		var err error
		got, err = job.run(c)
		<-done
		return err
	})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
	}
	if diff := gocmp.Diff(job.want, got); diff != "" {
		t.Errorf("word counts (-want +got):\n%s", diff)
	}
	waitNoExecutorPods(t, env, ns)
	waitNoProcesses(t, appID)
	checkCreates(t, env, ns, executors, lost)
	return stderr
}

// TestChaosExecutorPodsDeleted deletes 30% of the executor pods, gracefully
// or forced, in the map stage or in the reduce stage of a word count.
func TestChaosExecutorPodsDeleted(t *testing.T) {
	const executors = 4
	for _, tc := range []struct {
		stage string
		grace *int64
	}{
		{"", nil}, {"map", nil}, {"map", ptr.To[int64](0)}, {"reduce", nil}, {"reduce", ptr.To[int64](0)},
	} {
		how, lost := "graceful", int(math.Ceil(0.3*executors))
		if tc.grace != nil {
			how = "forced"
		}
		name := tc.stage + "/" + how
		if tc.stage == "" {
			name, lost = "no fault", 0 // the reference time
		}
		t.Run(name, func(t *testing.T) {
			env := cluster.Env(t)
			var fault func(chaosTarget)
			if tc.stage != "" {
				fault = func(a chaosTarget) {
					ns := a.ns
					a.job.waitMarker(t, tc.stage)
					pods := runningExecutorPods(t, env, ns)
					if len(pods) < lost {
						t.Errorf("%d executor pods run in the %s stage, want %d", len(pods), tc.stage, executors)
						return
					}
					for _, p := range pods[:lost] {
						err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: tc.grace})
						if err != nil {
							t.Errorf("deleting %s: %v", p.Name, err)
						}
					}
				}
			}
			stderr := chaosRun(t, env, executors, lost, fault)
			if n := strings.Count(stderr, "deleted by a user or the cluster (not the driver)"); n < lost {
				t.Errorf("%d removals say a user or the cluster deleted the pod, want %d; stderr:\n%s", n, lost, stderr)
			}
			if strings.Contains(stderr, "killed by the driver") {
				t.Errorf("a pod the user deleted is reported as killed by the driver; stderr:\n%s", stderr)
			}
		})
	}
}

// TestChaosExecutorProcessKilled SIGKILLs an executor's process in the map
// stage: its pod fails with exit code 137 and one replacement is created.
func TestChaosExecutorProcessKilled(t *testing.T) {
	stderr := chaosRun(t, cluster.Env(t), 3, 1, func(a chaosTarget) {
		a.job.waitMarker(t, "map")
		pids := appProcesses(a.appID)
		if len(pids) == 0 {
			t.Error("no executor process found")
			return
		}
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Errorf("killing executor process %d: %v", pids[0], err)
		}
	})
	if !strings.Contains(stderr, "137") {
		t.Errorf("no removal names the killed executor's exit code 137; stderr:\n%s", stderr)
	}
}

// envChaosDriver makes the test binary a client-mode driver running the
// chaos word count with the arguments in $DROVER_TEST_CHAOS_ARGS (JSON).
func init() {
	binaryModes = append(binaryModes, func() (bool, int) {
		if os.Getenv(envChaosDriver) != "" {
			return true, chaosDriverMain()
		}
		return false, 0
	})
}

const envChaosDriver = "DROVER_TEST_CHAOS_DRIVER"

// chaosDriverMain is the driver process of TestChaosClientDriverSignals.
func chaosDriverMain() int {
	var spec struct {
		Args []string
		Path string
	}
	if err := json.Unmarshal([]byte(os.Getenv(envChaosDriver)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "chaos driver:", err)
		return 2
	}
	return runDriver(spec.Args, os.Stderr, func(ctx *Context) error {
		fmt.Fprintln(os.Stderr, "chaos driver: app", ctx.AppID())
		_, err := MapPartitions(ReduceByKey(FlatMap(TextFile(ctx, spec.Path), chaosWords), testSum, 8), chaosSlowReduce).Collect()
		return err
	})
}

// TestChaosClientDriverSignals stops a client-mode driver with SIGINT and
// SIGTERM in the middle of its job: it creates no pod after the signal
// (counted by the API server), deletes its pods and ConfigMap, and its
// executors end.
func TestChaosClientDriverSignals(t *testing.T) {
	for _, tc := range []struct {
		sig syscall.Signal
		// midRamp signals while the driver is still creating its pods
		// (Spark's policy, one pod every 500 ms), not in the job.
		midRamp bool
	}{{syscall.SIGINT, false}, {syscall.SIGTERM, false}, {syscall.SIGTERM, true}} {
		sig, executors, name := tc.sig, 3, tc.sig.String()
		conf := []string{}
		if tc.midRamp {
			executors, name = 8, name+"/mid-ramp"
			conf = []string{"drover.kubernetes.allocation.policy=spark", "spark.kubernetes.allocation.batch.size=1",
				"spark.kubernetes.allocation.batch.delay=500ms"}
		}
		t.Run(name, func(t *testing.T) {
			env := cluster.Env(t)
			ns := env.NewNamespace(t)
			job := newChaosJob(t)
			spec, _ := json.Marshal(map[string]any{"Args": k8sArgs(env, ns, job.conf(executors, conf...)...), "Path": job.path})
			var stderr logtest.Buffer
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envChaosDriver+"="+string(spec), "KUBECONFIG="+env.Kubeconfig)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			if tc.midRamp {
				waitFor(t, "the second executor pod", func() bool { n, _ := podCreates(t, env, ns); return n >= 2 })
			} else {
				job.waitMarker(t, "map")
			}
			appID := appIDIn(t, env, ns)
			signalled := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(60 * time.Second):
				t.Fatalf("the driver did not exit within 60s of %s; stderr:\n%s", sig, stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code == 0 {
				t.Errorf("the driver exited 0 after %s in the middle of its job", sig)
			}
			t.Logf("driver exited %d, %s after %s; its last lines:\n%s", cmd.ProcessState.ExitCode(),
				time.Since(signalled).Round(time.Millisecond), sig, logging.Tail(stderr.String(), 4))
			_, reqs := podCreates(t, env, ns)
			for _, r := range reqs {
				if r.Received.After(signalled) {
					t.Errorf("pod %s created %s after %s", r.Name, r.Received.Sub(signalled), sig)
				}
			}
			waitNoExecutorPods(t, env, ns)
			waitNoProcesses(t, appID)
			if tc.midRamp {
				if n, _ := podCreates(t, env, ns); n >= executors {
					t.Errorf("%d pods created, want fewer than the %d the ramp would have made", n, executors)
				}
				return
			}
			checkCreates(t, env, ns, executors, 0)
		})
	}
}

// waitFor polls ok for up to a minute.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	if !pollUntil(time.Minute, 20*time.Millisecond, ok) {
		t.Fatalf("no %s within a minute", what)
	}
}

// TestChaosEtcdRestarted kills etcd under a running word count and starts it
// again 3 s later: the job is right and no pod is created for it.
func TestChaosEtcdRestarted(t *testing.T) {
	env := testenv.New(t, testenv.Options{Scheduler: true, ControllerManager: true, ProcessNodes: 1, AuditPodCreates: true})
	chaosRun(t, env, 3, 0, func(a chaosTarget) {
		a.job.waitMarker(t, "map")
		if err := env.Kill(testenv.Etcd); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(3 * time.Second) // real time: etcd, a real process, stays down 3 s
		if _, err := env.Restart(context.Background(), testenv.Etcd); err != nil {
			t.Error(err)
		}
	})
}
