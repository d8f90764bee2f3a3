//go:build integration

package submit_test

import (
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/config"
)

// closedPort is a loopback address where nothing listens: an API server
// that is down.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "https://" + addr
}

// TestAPIServerFailoverCLI: drover submit (cluster mode, the driver then
// given the list), status and kill succeed with a list of API servers
// whose first is down, and the dead one costs each command under a second.
func TestAPIServerFailoverCLI(t *testing.T) {
	env := cluster.Env(t)
	_, wordcount := binaries(t)
	ns := restrictedNamespace(t, env)
	list := "k8s://" + closedPort(t) + "," + env.URL
	withList := func(args []string) []string {
		out := slices.Clone(args)
		i := slices.Index(out, "k8s://"+env.URL)
		out[i] = list
		return out
	}

	r := drover(t, env.Kubeconfig, 3*time.Minute, withList(clusterArgs(env, ns, "--name", "wordcount",
		"local://"+wordcount, wordInput(t), "3"))...)
	if r.code != 0 || !strings.Contains(r.stderr, "succeeded") {
		t.Fatalf("submit with %s: exit %d, want 0 and success:\n%s", list, r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "leaving Kubernetes API server"); n != 1 {
		t.Errorf("submit said %d times that it left an API server, want once:\n%s", n, r.stderr)
	}
	pod := submittedPod(t, r)
	logs, err := env.ProcessNode.Logs(ns, pod)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "the\t400\n") {
		t.Errorf("the driver's answer is wrong:\n%s", logs)
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r = drover(t, env.Kubeconfig, time.Minute, withList(clusterArgs(env, ns, "--name", "sleeper",
		"--conf", "spark.kubernetes.submission.waitAppCompletion=false",
		"--conf", "spark.kubernetes.driverEnv."+helperEnv+"=sleep",
		"local://"+self))...)
	if r.code != 0 {
		t.Fatalf("submit of the sleeper: exit %d:\n%s", r.code, r.stderr)
	}
	sleeper := ns + ":" + submittedPod(t, r)

	// status through the list, and through the live API server alone: the
	// dead first one adds at most a second (a refused connection is
	// noticed at once; a silent one within the 900 ms dial timeout).
	timed := func(args ...string) (result, time.Duration) {
		start := time.Now()
		r := drover(t, env.Kubeconfig, 30*time.Second, args...)
		return r, time.Since(start)
	}
	var direct, failover []time.Duration
	for range 3 {
		r, d := timed("status", "--master", "k8s://"+env.URL, sleeper)
		if r.code != 0 {
			t.Fatalf("status: exit %d: %s", r.code, r.stderr)
		}
		direct = append(direct, d)
		r, d = timed("status", "--master", list, sleeper)
		if r.code != 0 || !strings.HasPrefix(r.stdout, sleeper+"\t") {
			t.Fatalf("status with %s: exit %d, %q %s", list, r.code, r.stdout, r.stderr)
		}
		failover = append(failover, d)
	}
	slices.Sort(direct)
	slices.Sort(failover)
	added := failover[1] - direct[1]
	t.Logf("drover status: median %s with the live API server alone, %s with a dead one listed first (added %s)",
		direct[1].Round(time.Millisecond), failover[1].Round(time.Millisecond), added.Round(time.Millisecond))
	if added > time.Second {
		t.Errorf("a dead first API server added %s to drover status, want ≤ 1 s", added)
	}

	// kill through spark.kubernetes.apiserver.host, without --master.
	r = drover(t, env.Kubeconfig, 30*time.Second, "kill", "--conf=spark.kubernetes.appKillPodDeletionGracePeriod=2s",
		"--conf", config.KubernetesAPIServerHost.Key()+"="+strings.TrimPrefix(list, "k8s://"), sleeper)
	if r.code != 0 || r.stdout != "killed "+sleeper+"\n" {
		t.Errorf("kill with %s: exit %d, %q %s", list, r.code, r.stdout, r.stderr)
	}
	// The word count's driver pod stays, as every finished one does.
	waitFor(t, "the sleeper's driver pod gone", func() bool {
		return !slices.ContainsFunc(leftovers(t, env, ns), func(o string) bool { return strings.Contains(o, "pod/sleeper") })
	})
}

// TestAPIServerFailoverBadInput: a bad list of API servers exits 2 naming
// the setting, from drover submit and from a client-mode driver, and
// creates nothing.
func TestAPIServerFailoverBadInput(t *testing.T) {
	env := cluster.Env(t)
	_, app := binaries(t)
	ns := env.NewNamespace(t)
	other := closedPort(t)
	for _, tc := range []struct {
		name, master, key string // key: spark.kubernetes.apiserver.host, "" unset
		want              string
	}{
		{"duplicate in the master URL", "k8s://" + env.URL + "," + env.URL, "", "repeats API server 1"},
		{"mixed schemes in the master URL", "k8s://" + env.URL + ",http://127.0.0.1:1", "", "mixes http and https"},
		{"foreign scheme in the master URL", "k8s://" + env.URL + ",ftp://127.0.0.1:1", "", `scheme "ftp" is not http or https`},
		{"empty member in the master URL", "k8s://" + env.URL + ",", "", "API server 2 of the list is empty"},
		{"duplicate in the key", "k8s://" + env.URL, env.URL + "," + env.URL, "spark.kubernetes.apiserver.host"},
		{"key contradicting the master URL", "k8s://" + env.URL, env.URL + "," + other, "spark.kubernetes.apiserver.host"},
		{"foreign scheme in the key", "k8s://" + env.URL, "ftp://127.0.0.1:1," + env.URL, "spark.kubernetes.apiserver.host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--master", tc.master, "--conf", "spark.kubernetes.namespace=" + ns,
				"--conf", "spark.kubernetes.container.image=drover-test:latest"}
			if tc.key != "" {
				args = append(args, "--conf", config.KubernetesAPIServerHost.Key()+"="+tc.key)
			}
			ways := map[string][]string{
				"drover submit": append(append([]string{"submit", "--deploy-mode", "cluster"}, args...), "local://"+app, "README.md"),
			}
			for way, argv := range ways {
				r := drover(t, env.Kubeconfig, 30*time.Second, argv...)
				checkBadList(t, way, r.code, r.stderr, tc.want)
			}
			code, out := runBinary(t, env, app, args...)
			checkBadList(t, "client mode", code, out, tc.want)
			assertEmptyNamespace(t, env, ns)
		})
	}
}

func checkBadList(t *testing.T, way string, code int, out, want string) {
	t.Helper()
	if code != config.ExitInvalid || !strings.Contains(out, want) {
		t.Errorf("%s: exit %d, want %d and a message containing %q:\n%s", way, code, config.ExitInvalid, want, out)
	}
}
