//go:build integration && realnode

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/testenv"
)

// TestDevClusterRealNode drives `drover dev-cluster up --real-node` from
// the host's network namespace, as a user would (it makes the node's
// namespace itself, so it must not run inside hack/realnode-netns.sh):
// the image make image builds imported with `image import`, examples/
// wordcount submitted in cluster mode to the real node through the
// loopback listener up made, reading from and writing to the dev
// cluster's object store, the counts read back with `cat`, then `down`,
// which must leave no process, mount, shim, cgroup, interface or file.
func TestDevClusterRealNode(t *testing.T) {
	unavailable := func(err error) {
		t.Helper()
		if testenv.RealNodeRequired() {
			t.Fatalf("real node unavailable (DROVER_REALNODE=1: failing instead of skipping): %v", err)
		}
		t.Skipf("real node unavailable, skipping (run make realnode): %v", err)
	}
	if os.Geteuid() != 0 {
		unavailable(errors.New("not root"))
	}
	if _, err := testenv.RunNetNSAddr(); err == nil {
		t.Fatal("this test runs in the host's network namespace (up --real-node makes its own), not through hack/realnode-netns.sh")
	}
	bin, err := testenv.FindBinaries(testenv.Etcd, testenv.KubeAPIServer, testenv.KubeScheduler, testenv.KubeControllerManager, testenv.Kubectl)
	if err == nil {
		err = testenv.CheckRealNodeBuilt()
	}
	if err == nil {
		err = testenv.CheckRealNodePackages()
	}
	if err == nil {
		_, err = testenv.VersityGWBinary()
	}
	if err != nil {
		unavailable(err)
	}
	kubectl := filepath.Join(bin, testenv.Kubectl)
	ctx, cancel := context.WithTimeout(t.Context(), 14*time.Minute)
	defer cancel()

	tmp := t.TempDir()
	drover := filepath.Join(tmp, "drover")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", drover, "github.com/drover-project/drover/cmd/drover").CombinedOutput(); err != nil {
		t.Fatalf("building drover: %v\n%s", err, out)
	}
	const image = "drover.invalid/wordcount:dev" // make image's tag
	tarball := filepath.Join(tmp, "wordcount-image.tar")
	if err := testenv.BuildAppImage(ctx, tarball, "./examples/wordcount", image); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(tmp, "state")
	env := append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(tmp, "xdg"))
	run := func(timeout time.Duration, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		c := exec.CommandContext(ctx, name, args...)
		c.Env = env
		out, err := c.CombinedOutput()
		return string(out), err
	}
	dc := func(args ...string) string {
		t.Helper()
		if args[0] == "up" {
			args = append(args, "--ttl", "20m") // should this test be killed
		}
		out, err := run(11*time.Minute, drover, append(append([]string{"dev-cluster"}, args...), "--state-dir", state)...)
		if err != nil {
			t.Fatalf("drover dev-cluster %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	t.Cleanup(func() {
		c := exec.Command(drover, "dev-cluster", "down", "--state-dir", state)
		c.Env = env
		_ = c.Run()
	})

	start := time.Now()
	out := dc("up", "--real-node")
	t.Logf("dev-cluster up --real-node in %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	var st devClusterState
	b, err := os.ReadFile(filepath.Join(state, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	rn := st.RealNode
	if rn == nil || st.S3 == nil || !strings.HasPrefix(st.URL, "https://127.0.0.1:") ||
		!strings.HasPrefix(st.S3.RealNodeEndpoint, "http://"+testenv.RunNetNSNodeAddr+":") || !strings.HasPrefix(st.S3.Endpoint, "http://127.0.0.1:") {
		t.Fatalf("state after up --real-node: %s", b)
	}
	if !strings.Contains(out, "real node "+testenv.RealNodeName) || !strings.Contains(out, "image import") {
		t.Errorf("up's usage does not tell about the real node:\n%s", out)
	}
	// The host has no address of the node's namespace.
	if _, err := net.InterfaceByName(testenv.RealNodeIface); err == nil {
		t.Errorf("interface %s is in the host's network namespace", testenv.RealNodeIface)
	}
	k := func(args ...string) string {
		t.Helper()
		out, err := run(time.Minute, kubectl, append([]string{"--kubeconfig", st.Kubeconfig}, args...)...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	if out := k("get", "node", testenv.RealNodeName, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}"); out != "True" {
		t.Fatalf("node %s Ready = %q", testenv.RealNodeName, out)
	}
	if out := dc("status"); !strings.Contains(out, "up: API server "+st.URL+" (responding)") || !strings.Contains(out, "real node "+testenv.RealNodeName) {
		t.Errorf("status:\n%s", out)
	}
	if out := dc("env"); !strings.Contains(out, "export DROVER_DEV_S3_ENDPOINT="+st.S3.Endpoint+"\n") ||
		!strings.Contains(out, "export DROVER_DEV_S3_REALNODE_ENDPOINT="+st.S3.RealNodeEndpoint+"\n") {
		t.Errorf("env:\n%s", out)
	}
	if out := dc("image", "import", tarball); !strings.Contains(out, "imported "+tarball) {
		t.Errorf("image import:\n%s", out)
	}

	const ns = "wc"
	master := "k8s://" + st.URL
	env = append(env, "KUBECONFIG="+st.Kubeconfig)
	if out, err := run(time.Minute, drover, "rbac", "--apply", "--namespace", ns, "--create-namespace", "--pod-security", "restricted", "--master", master); err != nil {
		t.Fatalf("drover rbac --apply: %v\n%s", err, out)
	}
	var text strings.Builder
	for i := range 300 {
		fmt.Fprintf(&text, "the quick brown fox %d jumps over the lazy dog %d\n", i%7, i%11)
	}
	words := filepath.Join(tmp, "words.txt")
	if err := os.WriteFile(words, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dc("put", words, "s3://"+DevS3Bucket+"/in/words.txt")
	args := []string{"submit", "--master", master, "--deploy-mode", "cluster", "--name", "wordcount",
		"--conf", "spark.kubernetes.namespace=" + ns,
		"--conf", "spark.kubernetes.container.image=" + image,
		"--conf", "spark.kubernetes.container.image.pullPolicy=Never",
		"--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver",
		"--conf", "spark.kubernetes.node.selector." + testenv.RealNodeLabel + "=true",
		"--conf", "spark.kubernetes.driver.podTemplateFile=" + rn.PodTemplate,
		"--conf", "spark.kubernetes.executor.podTemplateFile=" + rn.PodTemplate,
		"--conf", "spark.kubernetes.executor.deleteOnTermination=false",
		"--conf", "spark.kubernetes.driver.request.cores=250m", "--conf", "spark.kubernetes.executor.request.cores=250m",
		"--conf", "spark.hadoop.fs.s3a.endpoint=" + st.S3.RealNodeEndpoint,
		"--conf", "spark.hadoop.fs.s3a.path.style.access=true",
		"--driver-memory", "256m", "--executor-memory", "256m", "--num-executors", "2",
	}
	for _, role := range []string{"driver", "executor"} {
		for _, key := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
			args = append(args, "--conf", "spark.kubernetes."+role+".secretKeyRef."+key+"="+DevS3Secret+":"+key)
		}
	}
	args = append(args, "local:///app/wordcount", "s3://"+DevS3Bucket+"/in/words.txt", "3", "s3://"+DevS3Bucket+"/counts")
	start = time.Now()
	if out, err := run(5*time.Minute, drover, args...); err != nil {
		t.Fatalf("drover submit: %v\n%s\n--- pods ---\n%s", err, out, k("get", "pods", "-n", ns, "-o", "wide"))
	}
	t.Logf("word count on the real node in %s", time.Since(start).Round(time.Millisecond))
	got := strings.Split(strings.TrimSuffix(dc("cat", "s3://"+DevS3Bucket+"/counts/"), "\n"), "\n")
	slices.Sort(got)
	counts := map[string]int{}
	for _, w := range strings.Fields(text.String()) {
		counts[w]++
	}
	var want []string
	for w, n := range counts {
		want = append(want, w+"\t"+strconv.Itoa(n))
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the saved counts (-want +got):\n%s", diff)
	}
	nodes := strings.Fields(k("get", "pods", "-n", ns, "-o", "jsonpath={range .items[*]}{.spec.nodeName} {end}"))
	if len(nodes) != 3 || slices.ContainsFunc(nodes, func(n string) bool { return n != testenv.RealNodeName }) {
		t.Errorf("the application's pods ran on %v, want 3 on %s", nodes, testenv.RealNodeName)
	}

	pids := append([]int{st.PID}, st.ComponentPIDs...)
	start = time.Now()
	dc("down")
	t.Logf("dev-cluster down in %s", time.Since(start).Round(time.Millisecond))
	for _, pid := range pids {
		if running(pid) {
			t.Errorf("process %d still runs after down", pid)
		}
	}
	for _, p := range []string{state, rn.Dir} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s remains after down (%v)", p, err)
		}
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err != nil {
		t.Error(err)
	} else if strings.Contains(string(mounts), rn.Dir) {
		t.Errorf("mounts under %s remain after down", rn.Dir)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if cmdline, err := os.ReadFile(p); err == nil && strings.Contains(string(cmdline), rn.Dir) {
			t.Errorf("a process of the real node remains after down: %s", strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	// The kubepods cgroups go with the last real node: another test's may
	// be up by now.
	if others, _ := filepath.Glob(filepath.Join(os.TempDir(), "drover-realnode-*")); len(others) == 0 {
		if cg, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods"); len(cg) > 0 {
			t.Errorf("kubepods cgroups remain after down: %v", cg)
		}
	}
	if out := dc("status"); strings.TrimSpace(out) != "down" {
		t.Errorf("status after down = %q", out)
	}
}
