//go:build integration

package submit_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/testenv"
)

// The chaos scenarios of cluster mode (-run Chaos): faults that hit a
// driver pod submitted by drover submit on the real control plane, whose
// process node runs the driver and its executors as processes. The job is
// testdata/chaosapp, a word count whose map tasks wait a while. Each
// scenario checks what submit says, the answer when the job completes, the
// executor pods the driver created (seen by an informer of the test and
// counted by the API server's audit log), and that nothing of the
// application is left afterwards, processes included. Every wait is
// bounded.

// chaosInput writes the job's input and returns its path and the
// reference word count.
func chaosInput(t *testing.T) (string, map[string]int) {
	t.Helper()
	var text strings.Builder
	want := map[string]int{}
	for i := range 1200 {
		for j := range 1 + i%7 {
			w := fmt.Sprintf("w%d", (i*31+j*17)%97)
			want[w]++
			text.WriteString(w + " ")
		}
		text.WriteString("\n")
	}
	path := filepath.Join(t.TempDir(), "input.txt")
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, want
}

// chaosConf is the job's configuration: about a dozen map tasks of delay
// each, and executors that give up on an unreachable driver after 10 s.
func chaosConf(markers string, delay time.Duration) []string {
	return []string{
		"--conf", "spark.files.maxPartitionBytes=2000",
		"--conf", "spark.executorEnv.CHAOSAPP_MARKER_DIR=" + markers,
		"--conf", "spark.executorEnv.CHAOSAPP_TASK_DELAY=" + delay.String(),
		"--conf", "spark.network.timeout=10s", "--conf", "spark.executor.heartbeatInterval=2s",
		"--conf", "drover.log.level=info",
	}
}

var countLine = regexp.MustCompile(`^(\S+)\t(\d+)$`)

// countsIn is the word count chaosapp printed in log.
func countsIn(log string) map[string]int {
	_, rest, ok := strings.Cut(log, "chaosapp: counts\n")
	if !ok {
		return nil
	}
	rest, _, _ = strings.Cut(rest, "chaosapp: end")
	got := map[string]int{}
	for line := range strings.SplitSeq(rest, "\n") {
		if m := countLine.FindStringSubmatch(line); m != nil {
			got[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	return got
}

// executorPods records the name of every executor pod that appears in a
// namespace, from an informer the test starts before the submission.
type executorPods struct {
	mu    sync.Mutex
	names map[string]bool
}

func watchExecutors(t *testing.T, env *testenv.Env, ns string) *executorPods {
	t.Helper()
	e := &executorPods{names: map[string]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "spark-role=executor" }))
	inf := f.Core().V1().Pods().Informer()
	add := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			e.mu.Lock()
			e.names[p.Name] = true
			e.mu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, o any) { add(o) }}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the executor pod informer did not sync within 30s")
	}
	return e
}

// count is the number of distinct executor pods seen.
func (e *executorPods) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.names)
}

// driverCreates are the executor pod create requests the driver of appID
// sent, as the API server's audit log has them: stored (201), refused
// (any other code), and the time of the last one.
func driverCreates(t *testing.T, env *testenv.Env, ns, appID string) (stored, refused int, last time.Time) {
	t.Helper()
	all, err := env.PodCreates("drover-driver/" + appID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Namespace != ns {
			continue
		}
		if c.Code == 201 {
			stored++
		} else {
			refused++
		}
		if c.Received.After(last) {
			last = c.Received
		}
	}
	return stored, refused, last
}

// submission is drover submit running in the background.
type submission struct {
	cmd    *exec.Cmd
	stderr logtest.Buffer
	done   chan struct{}
}

func startSubmit(t *testing.T, env *testenv.Env, args ...string) *submission {
	t.Helper()
	bin, _ := binaries(t)
	s := &submission{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	s.cmd.Stdout, s.cmd.Stderr = &s.stderr, &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
	return s
}

// wait waits up to timeout for submit to exit and returns its exit code.
func (s *submission) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-s.done:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("drover submit did not exit within %s; its output:\n%s", timeout, s.stderr.String())
		return 0
	}
}

// driverPod waits up to 30 s for submit to name the driver pod.
func (s *submission) driverPod(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := submittedRE.FindStringSubmatch(s.stderr.String()); m != nil {
			return m[2]
		}
		select {
		case <-s.done:
			t.Fatalf("drover submit exited %d before submitting:\n%s", s.cmd.ProcessState.ExitCode(), s.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("drover submit named no driver pod within 30s:\n%s", s.stderr.String())
		}
	}
}

// waitUntil polls cond every 100 ms for up to bound and reports whether it
// came true; it fails t (not fatally) with what otherwise.
func waitUntil(t *testing.T, bound time.Duration, what string, cond func() bool) bool {
	t.Helper()
	if !poll(bound, 100*time.Millisecond, cond) {
		t.Errorf("not %s within %s", what, bound)
		return false
	}
	return true
}

// appLeft lists what is left of application appID in ns: its pods, config
// maps and secrets (by the spark-app-selector label), and every service
// (the namespace is the test's).
func appLeft(t *testing.T, env *testenv.Env, ns, appID string) []string {
	return appObjects(t, env, ns, "spark-app-selector="+appID)
}

// executorProcesses returns the pids of the live executor processes of
// appID: executors carry the application id in their environment.
func executorProcesses(appID string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), []byte("\x00"+envvar.AppID+"="+appID+"\x00")) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue // a zombie: ended, not yet reaped
		}
		pids = append(pids, pid)
	}
	return pids
}

// startTime is field 22 of /proc/pid/stat, which tells a process from a
// later one with the same pid; "" once pid is gone or a zombie.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 20 || fields[0] == "Z" {
		return ""
	}
	return fields[19]
}

// driverPID is the process of the driver container of p (the process node
// names it in the container id, procnode://PID).
func driverPID(t *testing.T, p *corev1.Pod) int {
	t.Helper()
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != podspec.DriverContainerName {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(cs.ContainerID, "procnode://%d", &pid); err != nil {
			t.Fatalf("driver container id %q: %v", cs.ContainerID, err)
		}
		return pid
	}
	t.Fatalf("driver pod %s has no status of container %s", p.Name, podspec.DriverContainerName)
	return 0
}

// runningExecutors counts the Running executor pods in ns.
func runningExecutors(t *testing.T, env *testenv.Env, ns string) int {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=executor"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// TestChaosDriverPodDeleted deletes the driver pod of a cluster-mode word
// count while its map tasks run: as kubectl delete does (default grace: the
// driver gets SIGTERM and stops by itself), forced (grace 0: the process
// node kills it at once and the pod object is gone), and frozen (SIGSTOP,
// then kubectl delete: the driver cannot do anything, its executors give up
// on it after spark.network.timeout, SIGKILL comes after the 30 s grace,
// and only the garbage collector removes what it owned). Each time drover
// submit exits non-zero naming the deletion; executor pods, ConfigMaps,
// Service and Secret (spark.authenticate) are gone within a bound, and so
// are the executor processes; and the driver created no executor pod
// beyond the 3 requested, none after the deletion.
func TestChaosDriverPodDeleted(t *testing.T) {
	const executors = 3
	for _, how := range []string{"graceful", "forced", "frozen"} {
		t.Run(how, func(t *testing.T) {
			env := cluster.Env(t)
			binaries(t)
			chaosapp := filepath.Join(binDir, "chaosapp")
			ns := restrictedNamespace(t, env)
			input, _ := chaosInput(t)
			markers := t.TempDir()
			seen := watchExecutors(t, env, ns)
			args := clusterArgs(env, ns, append([]string{"--name", "chaos", "--num-executors", strconv.Itoa(executors),
				"--conf", "spark.authenticate=true"}, chaosConf(markers, 3*time.Minute)...)...)
			sub := startSubmit(t, env, append(args, "local://"+chaosapp, input)...)
			pod := sub.driverPod(t)
			if !waitUntil(t, 90*time.Second, "a map task started", func() bool {
				_, err := os.Stat(filepath.Join(markers, "map"))
				return err == nil
			}) || !waitUntil(t, 30*time.Second, fmt.Sprintf("%d executors running", executors), func() bool {
				return runningExecutors(t, env, ns) == executors
			}) {
				t.FailNow()
			}
			driver, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			appID := driver.Labels["spark-app-selector"]
			before := appLeft(t, env, ns, appID)
			t.Logf("before the deletion: %v", before)
			for _, want := range []string{"configmap/", "secret/" + podspec.AuthSecretName(appID), "service/"} {
				if !strings.Contains(strings.Join(before, " "), want) {
					t.Errorf("no %s before the deletion; the scenario would not check its removal", want)
				}
			}

			pid, pidStart := driverPID(t, driver), ""
			del := metav1.DeleteOptions{}
			switch how {
			case "forced":
				del.GracePeriodSeconds = ptr.To[int64](0)
			case "frozen":
				pidStart = startTime(pid)
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				// Whatever happens, the frozen driver does not outlive the test.
				t.Cleanup(func() {
					if startTime(pid) == pidStart {
						_ = syscall.Kill(pid, syscall.SIGCONT)
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				})
			}
			struck := time.Now()
			if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), pod, del); err != nil {
				t.Fatal(err)
			}

			if how == "frozen" {
				// The driver cannot answer: the executors leave by themselves
				// after spark.network.timeout (10 s), before the grace period
				// ends and the garbage collector could remove their pods.
				if waitUntil(t, 25*time.Second, "the executors of the frozen driver exited", func() bool {
					return len(executorProcesses(appID)) == 0
				}) {
					t.Logf("executor processes exited %s after the driver froze", time.Since(struck).Round(100*time.Millisecond))
					if _, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{}); err != nil {
						t.Errorf("the frozen driver's pod was gone before its executors exited (%v): they did not leave by themselves", err)
					}
				}
			}
			// The frozen driver's pod goes only at SIGKILL, after its 30 s grace.
			code := sub.wait(t, 75*time.Second)
			exited := time.Since(struck)
			out := sub.stderr.String()
			t.Logf("drover submit exited %d %s after the deletion:\n%s", code, exited.Round(100*time.Millisecond), out)
			if code == 0 {
				t.Error("drover submit exited 0 for a driver whose pod was deleted")
			}
			if !strings.Contains(out, "the driver pod was deleted") {
				t.Error("drover submit does not say the driver pod was deleted")
			}
			if strings.Contains(out, "succeeded") {
				t.Error("drover submit says the application succeeded")
			}

			if waitUntil(t, 60*time.Second, "nothing of the application left", func() bool { return len(appLeft(t, env, ns, appID)) == 0 }) {
				t.Logf("nothing of the application left %s after the deletion", time.Since(struck).Round(100*time.Millisecond))
			} else {
				t.Logf("left: %v", appLeft(t, env, ns, appID))
			}
			waitUntil(t, 30*time.Second, "no executor process left", func() bool { return len(executorProcesses(appID)) == 0 })
			if how == "frozen" {
				waitUntil(t, 10*time.Second, "the frozen driver process killed", func() bool { return startTime(pid) != pidStart })
			}

			stored, refused, last := driverCreates(t, env, ns, appID)
			t.Logf("executor pods: %d seen, %d created (audit), %d create requests refused", seen.count(), stored, refused)
			if n := seen.count(); n > executors {
				t.Errorf("%d executor pods appeared, want at most the %d requested", n, executors)
			}
			if stored > executors {
				t.Errorf("the driver created %d executor pods, want at most the %d requested", stored, executors)
			}
			if last.After(struck) {
				t.Errorf("the driver sent a pod create %s after its pod was deleted", last.Sub(struck))
			}
		})
	}
}

// TestChaosResourceQuota runs a cluster-mode word count asking for 4
// executors in a namespace whose quota admits 3 pods, the driver's
// included: the job completes right with the 2 executors the quota allows,
// submit's status lines say what holds the other 2 back, the driver starts
// the job as soon as it knows no more can come instead of waiting for
// spark.scheduler.maxRegisteredResourcesWaitingTime (30 s), and exactly 2
// executor pods are created, with no loop of refused creates.
func TestChaosResourceQuota(t *testing.T) {
	env := cluster.Env(t)
	binaries(t)
	chaosapp := filepath.Join(binDir, "chaosapp")
	ns := restrictedNamespace(t, env)
	ctx := t.Context()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods3"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}},
	}
	if _, err := env.Client.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The quota controller fills in the status that admission checks.
	if !waitUntil(t, 30*time.Second, "the quota processed", func() bool {
		q, err := env.Client.CoreV1().ResourceQuotas(ns).Get(ctx, quota.Name, metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil
	}) {
		t.FailNow()
	}
	input, want := chaosInput(t)
	seen := watchExecutors(t, env, ns)
	args := clusterArgs(env, ns, append([]string{"--name", "quota", "--num-executors", "4",
		"--conf", "spark.kubernetes.report.interval=1s"}, chaosConf(t.TempDir(), time.Second)...)...)
	start := time.Now()
	r := drover(t, env.Kubeconfig, 2*time.Minute, append(args, "local://"+chaosapp, input)...)
	elapsed := time.Since(start)
	t.Logf("drover submit exited %d after %s:\n%s", r.code, elapsed.Round(100*time.Millisecond), r.stderr)
	if r.code != 0 {
		t.Fatalf("exit code %d, want 0", r.code)
	}
	pod := submittedPod(t, r)
	logs, err := env.ProcessNode.Logs(ns, pod)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, countsIn(string(logs))); diff != "" {
		t.Errorf("word counts (-want +got):\n%s\ndriver log:\n%s", diff, logs)
	}
	if !regexp.MustCompile(`executors: \d+ running, \d+ pending, 2 held back by ResourceQuota pods3\n`).MatchString(r.stderr) {
		t.Error("no line of submit says the quota holds 2 executors back")
	}
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.Contains(line, ": Succeeded on ") && strings.Contains(line, "running") {
			t.Errorf("after the driver succeeded, submit still counts executors as running: %q", line)
		}
	}
	for _, want := range []string{"starting without all executors: the cluster manager cannot create more for now", "ResourceQuota pods3"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("the driver's log lacks %q", want)
		}
	}
	if strings.Contains(string(logs), "maxRegisteredResourcesWaitingTime passed") {
		t.Error("the driver waited for spark.scheduler.maxRegisteredResourcesWaitingTime")
	}
	appID := ""
	if p, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{}); err == nil {
		appID = p.Labels["spark-app-selector"]
	} else {
		t.Fatal(err)
	}
	stored, refused, _ := driverCreates(t, env, ns, appID)
	t.Logf("executor pods: %d seen, %d created (audit), %d create requests refused", seen.count(), stored, refused)
	if n := seen.count(); n != 2 {
		t.Errorf("%d executor pods appeared, want the 2 the quota allows", n)
	}
	if stored != 2 {
		t.Errorf("the driver created %d executor pods, want the 2 the quota allows", stored)
	}
	// Refusals come from the round that met the quota, one per executor
	// held back at most; the job runs for seconds, allocation rounds every
	// second: retries while the quota holds would show.
	if refused < 1 || refused > 2 {
		t.Errorf("%d executor pod creates refused, want 1 or 2: the 2 executors held back at most (more: the driver keeps asking the quota)", refused)
	}
	// The driver stopped its executors: no executor pod or process is left.
	waitUntil(t, 30*time.Second, "no executor pod left", func() bool { return runningExecutors(t, env, ns) == 0 && len(appLeftPods(t, env, ns, appID)) <= 1 })
	waitUntil(t, 30*time.Second, "no executor process left", func() bool { return len(executorProcesses(appID)) == 0 })
}

// appLeftPods lists the pods of appID in ns (the succeeded driver's stays).
func appLeftPods(t *testing.T, env *testenv.Env, ns, appID string) []corev1.Pod {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-app-selector=" + appID})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}
