//go:build integration

package submit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/testenv"
)

// How a bad input is given: drover submit in cluster mode, the application
// binary as a client-mode driver on Kubernetes, or the application binary
// under local-cluster.
const (
	viaSubmit = 1 << iota
	viaClient
	viaLocalCluster
	everywhere = viaSubmit | viaClient | viaLocalCluster
)

// TestBadInputCreatesNothing: every bad setting is refused before anything
// exists, the same way from the CLI and from the application binary: exit
// code config.ExitInvalid, one message naming the key, no doubled prefix,
// and no object in the namespace (listed through the API).
func TestBadInputCreatesNothing(t *testing.T) {
	env := cluster.Env(t)
	droverBin, app := binaries(t)
	ns := env.NewNamespace(t)
	dir := t.TempDir()
	badYAML := filepath.Join(dir, "bad-template.yaml")
	if err := os.WriteFile(badYAML, []byte("apiVersion: v1\nkind: Pod\nspec: [not, a, map\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notAPod := filepath.Join(dir, "service.yaml")
	if err := os.WriteFile(notAPod, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	testCases := []struct {
		name string
		conf []string // --conf pairs
		key  string   // what the message must name
		via  int
	}{
		// The executor pods' settings.
		{"reserved executor label", []string{"spark.kubernetes.executor.label.spark-role=x"}, "spark.kubernetes.executor.label.spark-role", everywhere},
		{"executor label key with a space", []string{"spark.kubernetes.executor.label.bad key=x"}, "spark.kubernetes.executor.label.bad key", everywhere},
		{"executor label value", []string{"spark.kubernetes.executor.label.team=not ok!"}, "spark.kubernetes.executor.label.team", everywhere},
		{"executor annotation key", []string{"spark.kubernetes.executor.annotation.bad key=x"}, "spark.kubernetes.executor.annotation.bad key", everywhere},
		{"volume without mount path", []string{"spark.kubernetes.executor.volumes.hostPath.data.options.path=/tmp"}, "spark.kubernetes.executor.volumes.hostPath.data", everywhere},
		{"volume mount path relative", []string{"spark.kubernetes.executor.volumes.hostPath.data.mount.path=data",
			"spark.kubernetes.executor.volumes.hostPath.data.options.path=/tmp"}, "spark.kubernetes.executor.volumes.hostPath.data.mount.path", everywhere},
		{"hostPath without the key", []string{"spark.kubernetes.executor.volumes.hostPath.data.mount.path=/data",
			"spark.kubernetes.executor.volumes.hostPath.data.options.path=/tmp"}, "drover.kubernetes.volumes.allowHostVolumes", everywhere},
		{"volume of an unknown type", []string{"spark.kubernetes.executor.volumes.magic.data.mount.path=/data"}, "spark.kubernetes.executor.volumes.magic", everywhere},
		{"claim without a name", []string{"spark.kubernetes.executor.volumes.persistentVolumeClaim.data.mount.path=/data"}, "spark.kubernetes.executor.volumes.persistentVolumeClaim.data", everywhere},
		{"emptyDir size", []string{"spark.kubernetes.executor.volumes.emptyDir.data.mount.path=/data",
			"spark.kubernetes.executor.volumes.emptyDir.data.options.sizeLimit=lots"}, "spark.kubernetes.executor.volumes.emptyDir.data.options.sizeLimit", everywhere},
		{"secretKeyRef without name:key", []string{"spark.kubernetes.executor.secretKeyRef.TOKEN=justaname"}, "spark.kubernetes.executor.secretKeyRef.TOKEN", everywhere},
		{"secretKeyRef with an empty key", []string{"spark.kubernetes.executor.secretKeyRef.TOKEN=name:"}, "spark.kubernetes.executor.secretKeyRef.TOKEN", everywhere},
		{"node selector value", []string{"spark.kubernetes.node.selector.zone=not ok!"}, "spark.kubernetes.node.selector.zone", everywhere},
		{"secret name", []string{"spark.kubernetes.executor.secrets.Bad_Secret=/mnt/s"}, "spark.kubernetes.executor.secrets.Bad_Secret", everywhere},
		{"request above limit", []string{"spark.kubernetes.executor.request.cores=4", "spark.kubernetes.executor.limit.cores=2"}, "spark.kubernetes.executor.request.cores", everywhere},
		{"request cores", []string{"spark.kubernetes.executor.request.cores=lots"}, "spark.kubernetes.executor.request.cores", everywhere},
		{"limit cores", []string{"spark.kubernetes.executor.limit.cores=-1"}, "spark.kubernetes.executor.limit.cores", everywhere},
		{"template missing", []string{"spark.kubernetes.executor.podTemplateFile=/nonexistent/template.yaml"}, "spark.kubernetes.executor.podTemplateFile", everywhere},
		{"template not YAML", []string{"spark.kubernetes.executor.podTemplateFile=" + badYAML}, "spark.kubernetes.executor.podTemplateFile", everywhere},
		{"template not a pod", []string{"spark.kubernetes.executor.podTemplateFile=" + notAPod}, "spark.kubernetes.executor.podTemplateFile", everywhere},
		{"termination grace period", []string{"spark.kubernetes.executor.terminationGracePeriodSeconds=-5"}, "spark.kubernetes.executor.terminationGracePeriodSeconds", everywhere},
		{"pod name prefix", []string{"spark.kubernetes.executor.podNamePrefix=Bad_Prefix"}, "spark.kubernetes.executor.podNamePrefix", everywhere},
		{"node selector key", []string{"spark.kubernetes.node.selector.bad key=x"}, "spark.kubernetes.node.selector.bad key", everywhere},
		{"pull policy", []string{"spark.kubernetes.container.image.pullPolicy=Sometimes"}, "spark.kubernetes.container.image.pullPolicy", everywhere},
		{"scheduler name", []string{"spark.kubernetes.executor.scheduler.name=Bad Name"}, "spark.kubernetes.executor.scheduler.name", everywhere},
		{"local dir not absolute", []string{"spark.local.dir=relative/dir"}, "spark.local.dir", viaSubmit | viaClient},
		{"executor binary relative", []string{"drover.kubernetes.executor.binary=app"}, "drover.kubernetes.executor.binary", everywhere},
		// Allocation.
		{"batch size", []string{"spark.kubernetes.allocation.batch.size=0"}, "spark.kubernetes.allocation.batch.size", everywhere},
		{"batch delay", []string{"spark.kubernetes.allocation.batch.delay=soon"}, "spark.kubernetes.allocation.batch.delay", everywhere},
		{"allocation policy", []string{"drover.kubernetes.allocation.policy=fastest"}, "drover.kubernetes.allocation.policy", everywhere},
		{"create concurrency", []string{"drover.kubernetes.allocation.createConcurrency=0"}, "drover.kubernetes.allocation.createConcurrency", everywhere},
		{"max pending pods", []string{"spark.kubernetes.allocation.maxPendingPods=-5"}, "spark.kubernetes.allocation.maxPendingPods", everywhere},
		{"delete on termination", []string{"spark.kubernetes.executor.deleteOnTermination=maybe"}, "spark.kubernetes.executor.deleteOnTermination", everywhere},
		// Every master's settings.
		{"executor memory", []string{"spark.executor.memory=4gg"}, "spark.executor.memory", everywhere},
		{"executor instances", []string{"spark.executor.instances=abc"}, "spark.executor.instances", everywhere},
		{"executor cores", []string{"spark.executor.cores=0"}, "spark.executor.cores", everywhere},
		{"memory overhead", []string{"spark.executor.memoryOverhead=lots"}, "spark.executor.memoryOverhead", everywhere},
		{"task max failures", []string{"spark.task.maxFailures=-1"}, "spark.task.maxFailures", everywhere},
		{"dynamic allocation flag", []string{"spark.dynamicAllocation.enabled=maybe"}, "spark.dynamicAllocation.enabled", everywhere},
		{"dynamic allocation bounds", []string{"spark.dynamicAllocation.enabled=true", "spark.dynamicAllocation.minExecutors=5",
			"spark.dynamicAllocation.maxExecutors=2"}, "spark.dynamicAllocation.minExecutors", everywhere},
		{"idle timeout", []string{"spark.dynamicAllocation.executorIdleTimeout=never"}, "spark.dynamicAllocation.executorIdleTimeout", everywhere},
		{"heartbeat not below the timeout", []string{"spark.network.timeout=5s", "spark.executor.heartbeatInterval=10s"}, "spark.network.timeout", everywhere},
		{"heartbeat interval", []string{"spark.executor.heartbeatInterval=often"}, "spark.executor.heartbeatInterval", everywhere},
		{"driver port", []string{"spark.driver.port=abc"}, "spark.driver.port", everywhere},
		{"authenticate", []string{"spark.authenticate=perhaps"}, "spark.authenticate", everywhere},
		{"unknown drover key", []string{"drover.log.levle=info"}, "drover.log.level", everywhere},
		{"log level", []string{"drover.log.level=loud"}, "drover.log.level", everywhere},
		{"empty key", []string{"=3"}, `"=3"`, everywhere},
		{"kept logs without a directory", []string{"spark.driver.log.persistToDfs.enabled=true"}, "spark.driver.log.dfsDir", everywhere},
		{"kept log directory of an unknown scheme", []string{"spark.driver.log.persistToDfs.enabled=true", "spark.driver.log.dfsDir=hdfs://nn/logs"},
			"spark.driver.log.dfsDir", everywhere},
		{"executors' kept log directory", []string{"spark.driver.log.persistToDfs.enabled=true", "spark.driver.log.dfsDir=/tmp/logs",
			"drover.executor.log.dfsDir=gs://bucket/logs"}, "drover.executor.log.dfsDir", everywhere},
		{"UI token too short", []string{"drover.ui.token=short"}, "drover.ui.token", everywhere},
		{"sensitive variable no Secret key can name", []string{"spark.executorEnv.DB:PASSWORD=x"}, "spark.executorEnv.DB:PASSWORD", viaSubmit | viaClient},
		// The driver pod's settings (cluster mode).
		{"reserved driver label", []string{"spark.kubernetes.driver.label.spark-app-selector=x"}, "spark.kubernetes.driver.label.spark-app-selector", viaSubmit},
		{"driver request above limit", []string{"spark.kubernetes.driver.request.cores=4", "spark.kubernetes.driver.limit.cores=1"}, "spark.kubernetes.driver.request.cores", viaSubmit},
		{"driver credential file missing", []string{"spark.kubernetes.authenticate.driver.clientKeyFile=/nonexistent/key.pem"}, "spark.kubernetes.authenticate.driver.clientKeyFile", viaSubmit},
		{"driver volume without mount path", []string{"spark.kubernetes.driver.volumes.hostPath.data.options.path=/tmp"}, "spark.kubernetes.driver.volumes.hostPath.data", viaSubmit},
		{"sensitive driver variable no Secret key can name", []string{"spark.kubernetes.driverEnv.MY TOKEN=x"}, "spark.kubernetes.driverEnv.MY TOKEN", viaSubmit},
	}
	if n := len(testCases); n < 40 {
		t.Fatalf("%d bad inputs, want at least 40", n)
	}
	base := []string{"--conf", "spark.kubernetes.namespace=" + ns, "--conf", "spark.kubernetes.container.image=drover-test:latest",
		"--conf", "drover.log.level=warn"}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			var confArgs []string
			for _, c := range tc.conf {
				confArgs = append(confArgs, "--conf", c)
			}
			ways := map[string][]string{}
			if tc.via&viaSubmit != 0 {
				ways["drover submit"] = append(append([]string{droverBin, "submit", "--master", "k8s://" + env.URL, "--deploy-mode", "cluster"}, base...),
					append(confArgs, "local://"+app, "README.md")...)
			}
			if tc.via&viaClient != 0 {
				ways["client mode"] = append(append([]string{app, "--master", "k8s://" + env.URL}, base...), confArgs...)
			}
			if tc.via&viaLocalCluster != 0 {
				ways["local-cluster"] = append([]string{app, "--master", "local-cluster[1,1,256]"}, confArgs...)
			}
			for way, argv := range ways {
				code, out := runBinary(t, env, argv[0], argv[1:]...)
				if code != config.ExitInvalid {
					t.Errorf("%s: exit code %d, want %d; output:\n%s", way, code, config.ExitInvalid, out)
				}
				if !strings.Contains(out, tc.key) {
					t.Errorf("%s: the message does not name %q:\n%s", way, tc.key, out)
				}
				for _, doubled := range []string{"invalid configuration: invalid configuration", "drover: drover:", "Error: Error:"} {
					if strings.Contains(out, doubled) {
						t.Errorf("%s: doubled prefix %q:\n%s", way, doubled, out)
					}
				}
			}
			assertEmptyNamespace(t, env, ns)
		})
	}
}

// runBinary runs bin with args against env and returns its exit code and
// output.
func runBinary(t *testing.T, env *testenv.Env, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", bin, err)
	}
	return code, string(out)
}

// assertEmptyNamespace fails t when ns holds a pod, service, config map
// or secret, and removes them so the next case is judged on its own.
func assertEmptyNamespace(t *testing.T, env *testenv.Env, ns string) {
	t.Helper()
	found := appObjects(t, env, ns, "")
	if len(found) == 0 {
		return
	}
	t.Errorf("objects created in %s: %s", ns, strings.Join(found, ", "))
	ctx, del := t.Context(), metav1.DeleteOptions{}
	for _, o := range found {
		kind, name, _ := strings.Cut(o, "/")
		switch kind {
		case "pod":
			_ = env.Client.CoreV1().Pods(ns).Delete(ctx, name, del)
		case "configmap":
			_ = env.Client.CoreV1().ConfigMaps(ns).Delete(ctx, name, del)
		case "secret":
			_ = env.Client.CoreV1().Secrets(ns).Delete(ctx, name, del)
		case "service":
			_ = env.Client.CoreV1().Services(ns).Delete(ctx, name, del)
		}
	}
}

// TestMessagesPointAtTheFix: the usual first mistakes end with a message
// that names the fix, and leave nothing behind.
func TestMessagesPointAtTheFix(t *testing.T) {
	env := cluster.Env(t)
	_, app := binaries(t)
	master := "k8s://" + env.URL
	submitArgs := func(ns string, extra ...string) []string {
		return append([]string{"submit", "--master", master, "--deploy-mode", "cluster",
			"--conf", "spark.kubernetes.namespace=" + ns, "--conf", "spark.kubernetes.container.image=drover-test:latest",
			"--conf", "spark.kubernetes.report.interval=2s", "--num-executors", "1"}, append(extra, "local://"+app, "README.md")...)
	}

	t.Run("service account missing", func(t *testing.T) {
		ns := env.NewNamespace(t)
		r := drover(t, env.Kubeconfig, time.Minute, submitArgs(ns, "--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=nobody")...)
		if r.code != 1 {
			t.Errorf("exit code %d, want 1", r.code)
		}
		for _, want := range []string{"drover rbac --apply --namespace " + ns, "spark.kubernetes.authenticate.driver.serviceAccountName"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the message lacks %q:\n%s", want, r.stderr)
			}
		}
		assertEmptyNamespace(t, env, ns) // the config map made first is gone again
	})

	t.Run("host volume named by --verbose", func(t *testing.T) {
		ns := env.NewNamespace(t)
		r := drover(t, env.Kubeconfig, time.Minute, submitArgs(ns, "--verbose",
			"--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=nobody",
			"--conf", "drover.kubernetes.volumes.allowHostVolumes=true",
			"--conf", "spark.kubernetes.executor.volumes.hostPath.data.mount.path=/data",
			"--conf", "spark.kubernetes.executor.volumes.hostPath.data.options.path=/tmp")...)
		want := "warning: spark.kubernetes.executor.volumes.hostPath.data: a hostPath volume, outside what Kubernetes controls"
		if !strings.Contains(r.stderr, want) {
			t.Errorf("--verbose does not name the hostPath volume:\n%s", r.stderr)
		}
		assertEmptyNamespace(t, env, ns)
	})

	t.Run("default service account without rights", func(t *testing.T) {
		ns := env.NewNamespace(t)
		r := drover(t, env.Kubeconfig, 2*time.Minute, submitArgs(ns)...)
		if r.code != 1 {
			t.Errorf("exit code %d, want 1", r.code)
		}
		for _, want := range []string{"service account " + ns + "/default", "drover rbac --apply --namespace " + ns,
			"spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the message lacks %q:\n%s", want, r.stderr)
			}
		}
	})

	t.Run("http to a TLS API server", func(t *testing.T) {
		plain := "k8s://http://" + strings.TrimPrefix(env.URL, "https://")
		r := drover(t, env.Kubeconfig, time.Minute, "status", "--master", plain, "default:x")
		if r.code != 1 || !strings.Contains(r.stderr, "expects TLS: use k8s://https://") {
			t.Errorf("exit code %d, message:\n%s", r.code, r.stderr)
		}
		// One line of error; client-go's klog lines stay off the terminal.
		if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
			t.Errorf("%d lines, want one:\n%s", n+1, r.stderr)
		}
	})
}
