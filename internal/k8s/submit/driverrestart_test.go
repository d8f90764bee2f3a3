//go:build integration

package submit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	drv, _ := binaries(t)
	app := filepath.Join(filepath.Dir(drv), "restartapp")
	input := wordInput(t)
	for _, tc := range []struct {
		name string
		// at is the marker of the moment the driver is killed; kills how
		// many attempts are killed there.
		at    string
		kills int
		env   []string // the application's settings (RESTARTAPP_*)
		// rerun is what a map stage of attempt 2 may be named: "" when
		// no map task may run.
		rerun string
	}{
		{name: "after the sort's map stage", at: "save-", kills: 1, env: []string{"RESTARTAPP_SAVE_DELAY=20s"}},
		{name: "during the sort's map side", at: "sortmap-", kills: 1, env: []string{"RESTARTAPP_SORT_DELAY=20s"},
			rerun: "restartapp.sortmap"},
		{name: "after the commit", at: "saved", kills: 1, env: []string{"RESTARTAPP_EXIT_DELAY=30s"}},
		{name: "four times", at: "save-", kills: 4, env: []string{"RESTARTAPP_SAVE_DELAY=20s", "RESTARTAPP_SLOW_ALWAYS=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := restrictedNamespace(t, env)
			store, err := testenv.StartS3(t.Context(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer store.Stop()
			for _, b := range []string{"out", "events"} {
				if err := store.CreateBucket(t.Context(), b); err != nil {
					t.Fatal(err)
				}
			}
			markers := t.TempDir()
			if err := os.Chmod(markers, 0o777); err != nil {
				t.Fatal(err)
			}
			args := clusterArgs(env, ns, "--name", "restart", "--num-executors", "4",
				"--conf", "spark.kubernetes.driver.restartPolicy=OnFailure",
				"--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.dir=s3://events/",
				"--conf", "spark.eventLog.compress=false")
			for _, kv := range append(tc.env, "RESTARTAPP_MARKER_DIR="+markers) {
				args = append(args, "--conf", "spark.kubernetes.driverEnv."+kv, "--conf", "spark.executorEnv."+kv)
			}
			for _, kv := range store.Conf() {
				args = append(args, "--conf", kv)
			}
			for _, kv := range store.Env() {
				args = append(args, "--conf", "spark.executorEnv."+kv)
			}
			args = append(args, "local://"+app, input, "s3://out/counts")

			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, drv, args...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()

			driverPod := ""
			for i := range tc.kills {
				waitFor(t, fmt.Sprintf("attempt %d to reach %s", i+1, tc.at), func() bool {
					m, _ := filepath.Glob(filepath.Join(markers, tc.at+"*"))
					return len(m) > 0
				})
				if driverPod == "" {
					pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=driver"})
					if err != nil || len(pods.Items) != 1 {
						t.Fatalf("driver pods: %v, %v", pods, err)
					}
					driverPod = pods.Items[0].Name
				}
				// The next attempt's markers are its own.
				if err := clearDir(markers); err != nil {
					t.Fatal(err)
				}
				if err := env.SignalContainer(ns, driverPod, "", syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				t.Logf("SIGKILLed attempt %d of the driver of pod %s", i+1, driverPod)
			}
			err = <-done
			t.Logf("drover submit:\n%s", stderr.String())
			creates, cerr := env.PodCreates("drover-driver/")
			if cerr != nil {
				t.Fatal(cerr)
			}
			var execs []string
			for _, c := range creates {
				if c.Namespace == ns && c.Code == 201 {
					execs = append(execs, c.Name)
				}
			}
			if len(execs) != 4 {
				t.Errorf("executor pods created: %v, want the first attempt's 4 only", execs)
			}
			if tc.kills == 4 {
				checkOutOfRestarts(t, env, ns, driverPod, err, stderr.String())
				return
			}
			if err != nil {
				t.Fatalf("drover submit: %v, want exit 0", err)
			}
			if !strings.Contains(stderr.String(), "driver restarted (attempt 2 of 4): exit 137") {
				t.Errorf("submit did not report the restart")
			}
			// The output is what a run without a crash saves.
			if diff := compareLines(wantCounts(t, input), savedLines(t, store, "out", "counts/")); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			// No map task of a stage that completed before the crash ran
			// again.
			for stage, tasks := range mapTasks(t, store, "events") {
				if tc.rerun == "" || !strings.Contains(stage, tc.rerun) {
					t.Errorf("attempt 2 ran %d tasks of map stage %q, which attempt 1 completed", tasks, stage)
				}
			}
		})
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

// clearDir removes what dir holds.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// wantCounts is "word\tcount" for each word of the file at path, sorted
// by word: what the application saves.
func wantCounts(t *testing.T, path string) []string {
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
func savedLines(t *testing.T, store *testenv.S3, bucket, prefix string) []string {
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
