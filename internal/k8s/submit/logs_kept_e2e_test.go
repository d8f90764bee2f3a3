//go:build integration

package submit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/settings"
	"github.com/drover-project/drover/internal/testenv"
)

// keptApplication fabricates what an application that ran in namespace
// ns as driver pod pod keeps in sink: two driver attempts, executors 1
// and 2, and the driver pod's record. It returns the application id.
func keptApplication(t *testing.T, sink keptlog.Sink, ns, pod string) string {
	t.Helper()
	appID := fmt.Sprintf("drover-%016x", rand.Uint64())
	logs := map[keptlog.Process]string{
		{AppID: appID, Attempt: 1}:              "driver attempt 1 line 1\ndriver attempt 1 line 2\n",
		{AppID: appID, Attempt: 2}:              "driver attempt 2 line 1\ndriver attempt 2 line 2\ndriver attempt 2 line 3\n",
		{AppID: appID, Executor: 1, Attempt: 1}: "executor 1 line 1\nexecutor 1 marker\n",
		{AppID: appID, Executor: 2, Attempt: 1}: "executor 2 \xff\x00 bytes\r\nexecutor 2 last line, unended",
	}
	for p, data := range logs {
		if err := keptlog.WriteAll(t.Context(), sink, p, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := keptlog.PutPod(t.Context(), sink, ns, pod, appID); err != nil {
		t.Fatal(err)
	}
	return appID
}

const keptDriverLog = "[drover: driver attempt 1]\ndriver attempt 1 line 1\ndriver attempt 1 line 2\n" +
	"[drover: driver attempt 2]\ndriver attempt 2 line 1\ndriver attempt 2 line 2\ndriver attempt 2 line 3\n"

// drover logs of an application whose pods are gone (they never were:
// nothing of it is in the cluster) reads what it kept, by the driver pod's
// name or the application id, from a local directory or an S3 prefix.
func TestKeptLogsAfterPodsAreGone(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	pod := fmt.Sprintf("wc-%08x-driver", rand.Uint32())
	dir := t.TempDir()
	appID := keptApplication(t, keptlog.LocalSink(dir), ns, pod)
	gone := "drover: pod " + ns + "/" + pod + " is gone; "
	noPods := "drover: no pod of application " + appID + " is left in namespace " + ns + "; "
	testCases := map[string]struct {
		args      []string
		code      int
		stdout    string
		notice    string   // stderr, exactly
		stderrHas []string // else these in stderr
	}{
		"driver pod": {args: []string{"--dir", dir, ns + ":" + pod}, stdout: keptDriverLog,
			notice: gone + "its kept log from " + dir + ":\n"},
		"driver pod, follow": {args: []string{"-f", "--dir", dir, ns + ":" + pod}, stdout: keptDriverLog,
			notice: gone + "its kept log from " + dir + ":\n"},
		"driver pod, tail into the first attempt": {args: []string{"--dir", dir, "--tail", "4", ns + ":" + pod},
			stdout: "[drover: driver attempt 1]\ndriver attempt 1 line 2\n" +
				"[drover: driver attempt 2]\ndriver attempt 2 line 1\ndriver attempt 2 line 2\ndriver attempt 2 line 3\n",
			notice: gone + "its kept log from " + dir + ":\n"},
		"driver pod, tail": {args: []string{"--dir", dir, "--tail", "1", ns + ":" + pod},
			stdout: "[drover: driver attempt 2]\ndriver attempt 2 line 3\n", notice: gone + "its kept log from " + dir + ":\n"},
		"executor, its bytes": {args: []string{"--dir", dir, "--executor", "2", ns + ":" + pod},
			stdout: "executor 2 \xff\x00 bytes\r\nexecutor 2 last line, unended",
			notice: gone + "the kept log of its executor 2 from " + dir + ":\n"},
		"executor, tail": {args: []string{"--dir", dir, "--executor", "1", "--tail", "1", ns + ":" + pod},
			stdout: "executor 1 marker\n", notice: gone + "the kept log of its executor 1 from " + dir + ":\n"},
		"application id": {args: []string{"--dir", dir, ns + ":" + appID}, stdout: keptDriverLog,
			notice: noPods + "its driver's kept log from " + dir + ":\n"},
		"application id alone, directory from --conf": {args: []string{"--conf", "spark.kubernetes.namespace=" + ns,
			"--conf", "spark.driver.log.dfsDir=file://" + dir, "--executor", "2", "--tail", "1", appID},
			stdout: "executor 2 last line, unended", notice: noPods + "the kept log of its executor 2 from " + dir + ":\n"},
		"no directory": {args: []string{ns + ":" + pod}, code: 1,
			stderrHas: []string{"no driver pod and no application id " + pod + " in namespace " + ns + ": gone", "--dir DIR", "spark.driver.log.dfsDir"}},
		"no such executor kept": {args: []string{"--dir", dir, "--executor", "9", ns + ":" + pod}, code: 1,
			stderrHas: []string{"pod " + ns + "/" + pod + " is gone; no kept log of executor 9 of application " + appID + " in " + dir +
				" (kept there: the driver (attempts 1, 2); executors 1, 2)"}},
		"nothing kept": {args: []string{"--dir", dir, ns + ":other-driver"}, code: 1,
			stderrHas: []string{"no kept log of a driver pod " + ns + "/other-driver or of an application other-driver in " + dir}},
		"bad directory": {args: []string{"--dir", "ftp://host/logs", ns + ":" + pod}, code: config.ExitInvalid,
			stderrHas: []string{"unsupported scheme ftp://"}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			r := drover(t, env.Kubeconfig, 30*time.Second, append([]string{"logs"}, tc.args...)...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tc.code, r.stderr)
			}
			if diff := cmp.Diff(tc.stdout, r.stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if tc.stderrHas == nil {
				if diff := cmp.Diff(tc.notice, r.stderr); diff != "" {
					t.Errorf("stderr (-want +got):\n%s", diff)
				}
			}
			for _, s := range tc.stderrHas {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr %q, want it to contain %q", r.stderr, s)
				}
			}
		})
	}

	// The driver pod is there, bound to a node that is not (its log
	// cannot be read): an executor whose pod is gone has its kept log
	// printed, and so has the driver.
	live := fmt.Sprintf("wc-%08x-driver", rand.Uint32())
	liveApp := keptApplication(t, keptlog.LocalSink(dir), ns, live)
	_, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: live, Labels: map[string]string{"spark-app-selector": liveApp, "spark-role": "driver"}},
		Spec: corev1.PodSpec{NodeName: "drover-test-lost-node",
			Containers: []corev1.Container{{Name: "spark-kubernetes-driver", Image: "nowhere"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := drover(t, env.Kubeconfig, 30*time.Second, "logs", "--dir", dir, "--executor", "1", ns+":"+live)
	if r.code != 0 || r.stdout != "executor 1 line 1\nexecutor 1 marker\n" ||
		r.stderr != "drover: the pod of executor 1 of "+ns+":"+live+" is gone; its kept log from "+dir+":\n" {
		t.Errorf("executor of a driver pod that is there: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = drover(t, env.Kubeconfig, 30*time.Second, "logs", "--dir", dir, ns+":"+live)
	if r.code != 0 || r.stdout != keptDriverLog ||
		!strings.HasPrefix(r.stderr, "drover: the log of pod "+ns+"/"+live+" cannot be read; its kept log from "+dir+":\n") {
		t.Errorf("driver pod whose log cannot be read: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = drover(t, env.Kubeconfig, 30*time.Second, "logs", ns+":"+live)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "reading the log of pod "+ns+"/"+live) {
		t.Errorf("driver pod whose log cannot be read, without a directory: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	t.Run("s3", func(t *testing.T) {
		srv := testenv.NewS3(t)
		if err := srv.CreateBucket(context.Background(), "logs"); err != nil {
			t.Fatal(err)
		}
		var confArgs []string
		for _, kv := range srv.Conf() {
			confArgs = append(confArgs, "--conf", kv)
		}
		conf, _, err := config.Load(config.Sources{Pairs: srv.Conf()})
		if err != nil {
			t.Fatal(err)
		}
		sink, err := keptlog.OpenSink("s3://logs/kept", settings.ObjectStore(conf))
		if err != nil {
			t.Fatal(err)
		}
		s3App := keptApplication(t, sink, ns, pod+"-s3")
		r := drover(t, env.Kubeconfig, 30*time.Second, append([]string{"logs", "--dir", "s3a://logs/kept", ns + ":" + pod + "-s3"}, confArgs...)...)
		if r.code != 0 || r.stdout != keptDriverLog || r.stderr != "drover: pod "+ns+"/"+pod+"-s3 is gone; its kept log from s3://logs/kept/:\n" {
			t.Errorf("driver from s3: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		r = drover(t, env.Kubeconfig, 30*time.Second, append([]string{"logs", "--dir", "s3://logs/kept", "--executor", "2", "--tail", "1", ns + ":" + s3App}, confArgs...)...)
		if r.code != 0 || r.stdout != "executor 2 last line, unended" {
			t.Errorf("executor from s3: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
}
