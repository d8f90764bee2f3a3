//go:build integration

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/testenv"
)

// TestDevClusterNeedsNoSharedFileSystem submits examples/wordcount in
// cluster mode to a dev cluster, reading its input from and writing its
// counts to the dev cluster's bucket, and proves that nothing passed through
// a shared file system:
//
//   - the input is uploaded with drover dev-cluster put and its local copy
//     deleted before the submit, so it exists only in the bucket; afterwards
//     no file outside the object store's own storage holds its lines, nor
//     the lines of the output (so no executor staged its part on disk);
//   - the driver and each executor ran in their own directories (working
//     directory, HOME, TMPDIR and local dirs), none inside another's;
//   - the pods' credentials came only from the namespace's Secret: a process
//     node gives pods a clean environment, and the driver passes executors
//     no keys.
//
// The process node is what proves it rather than local-cluster: there,
// executors are the driver's children with its environment and working
// directory, whereas here every pod is started by the node agent from its
// spec alone, as a kubelet would on another machine.
func TestDevClusterNeedsNoSharedFileSystem(t *testing.T) {
	if _, err := testenv.FindBinaries(testenv.Etcd, testenv.KubeAPIServer, testenv.KubeScheduler, testenv.KubeControllerManager); err != nil {
		testenv.Unavailable(t, err)
	}
	if _, err := testenv.VersityGWBinary(); err != nil {
		testenv.Unavailable(t, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin+"/", "github.com/drover-project/drover/cmd/drover",
		"github.com/drover-project/drover/examples/wordcount").CombinedOutput(); err != nil {
		t.Fatalf("building drover and wordcount: %v\n%s", err, out)
	}
	drover, wordcount := filepath.Join(bin, "drover"), filepath.Join(bin, "wordcount")
	state := filepath.Join(tmp, "state")
	env := append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(tmp, "xdg"))
	run := func(args ...string) (string, error) {
		c := exec.CommandContext(ctx, drover, args...)
		c.Env = env
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		return out.String(), err
	}
	dc := func(args ...string) string {
		t.Helper()
		out, err := run(append(append([]string{"dev-cluster"}, args...), "--state-dir", state)...)
		if err != nil {
			t.Fatalf("drover dev-cluster %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	t.Cleanup(func() {
		// ctx is done by now (and t.Context() too): down needs its own, or
		// the cluster outlives the test until its --ttl, with its state
		// directory gone.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, drover, "dev-cluster", "down", "--state-dir", state)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("drover dev-cluster down: %v\n%s", err, out)
		}
	})
	if out, err := run("dev-cluster", "up", "--state-dir", state, "--ttl", "10m"); err != nil {
		testenv.Unavailable(t, errors.New(out+err.Error()))
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`export (\w+)=(\S+)`).FindAllStringSubmatch(dc("env"), -1) {
		vars[m[1]] = m[2]
	}
	if vars["DROVER_DEV_S3_ENDPOINT"] == "" || vars["DROVER_DEV_S3_SECRET"] != DevS3Secret {
		t.Fatalf("dev-cluster env names no object store: %v", vars)
	}
	env = append(env, "KUBECONFIG="+vars["KUBECONFIG"])

	// Input: a common word, and rare ones whose count lines are unique to
	// the output (the driver prints only the most frequent word).
	marker := fmt.Sprintf("only-in-the-bucket-%d", time.Now().UnixNano())
	var input strings.Builder
	want := map[string]int{}
	for i := range 3000 {
		rare := fmt.Sprintf("%s-w%d", marker, i%700)
		fmt.Fprintf(&input, "common %s line %d of the input\n", rare, i)
		want[rare]++
	}
	local := filepath.Join(tmp, "input.txt")
	if err := os.WriteFile(local, []byte(input.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dc("put", local, "s3://drover/books/")
	if err := os.Remove(local); err != nil {
		t.Fatal(err)
	}

	const ns = "no-shared-fs"
	if out, err := run("rbac", "--apply", "--namespace", ns, "--create-namespace", "--pod-security", "restricted",
		"--master", vars["DROVER_DEV_MASTER"]); err != nil {
		t.Fatalf("drover rbac: %v\n%s", err, out)
	}
	// Every process of the application, seen while it runs.
	procs := watchProcesses(t, wordcount)
	ref := func(role, v string) []string {
		return []string{"--conf", "spark.kubernetes." + role + ".secretKeyRef." + v + "=" + DevS3Secret + ":" + v}
	}
	args := []string{"submit", "--master", vars["DROVER_DEV_MASTER"], "--deploy-mode", "cluster", "--name", "books",
		"--conf", "spark.kubernetes.namespace=" + ns,
		"--conf", "spark.kubernetes.container.image=unused-on-the-dev-cluster",
		"--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver",
		"--conf", "spark.hadoop.fs.s3a.endpoint=" + vars["DROVER_DEV_S3_ENDPOINT"],
		"--conf", "spark.hadoop.fs.s3a.path.style.access=true",
		"--conf", "spark.files.maxPartitionBytes=20000", // several splits, read by both executors
		"--num-executors", "2", "--executor-memory", "256m", "--driver-memory", "256m"}
	for _, role := range []string{"driver", "executor"} {
		args = append(args, ref(role, "AWS_ACCESS_KEY_ID")...)
		args = append(args, ref(role, "AWS_SECRET_ACCESS_KEY")...)
	}
	args = append(args, "local://"+wordcount, "s3://drover/books/", "1", "s3://drover/counts")
	out, err := run(args...)
	seen := procs.stop()
	if err != nil {
		t.Fatalf("drover submit: %v\n%s", err, out)
	}

	// The counts, read back from the bucket.
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(dc("cat", "s3://drover/counts/")), "\n") {
		var w string
		var n int
		if _, err := fmt.Sscanf(line, "%s\t%d", &w, &n); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		got[w] = n
	}
	if got["common"] != 3000 {
		t.Errorf("count of common = %d, want 3000", got["common"])
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("count of %s = %d, want %d", w, got[w], n)
		}
	}

	// Only the object store's storage holds the input and the output: not
	// the dev cluster's state (every pod's directory is in it), nor any
	// directory a process of the application used.
	outLine := fmt.Sprintf("%s-w7\t%d\n", marker, want[marker+"-w7"])
	roots := []string{tmp}
	for _, p := range seen {
		roots = append(roots, p.cwd, p.env["HOME"], p.localDir())
	}
	for _, root := range roots {
		if root == "" || root == "/" || root == os.TempDir() {
			continue
		}
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() && p == filepath.Join(state, s3Dir) {
				return filepath.SkipDir
			}
			if !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			if bytes.Contains(b, []byte("common "+marker)) {
				t.Errorf("%s holds the input, which should exist only in the bucket", p)
			}
			if bytes.Contains(b, []byte(outLine)) {
				t.Errorf("%s holds the output, which should exist only in the bucket", p)
			}
			return nil
		})
	}

	// Each process in its own directories.
	roles := map[string]int{}
	type place struct {
		pid       int
		what, dir string
	}
	var places []place
	for _, p := range seen {
		roles[p.role]++
		for what, dir := range map[string]string{"working directory": p.cwd, "HOME": p.env["HOME"], "local dir": p.localDir()} {
			if dir != "" {
				places = append(places, place{p.pid, what, dir})
			}
		}
		t.Logf("%s (pid %d): cwd %s, HOME %s, local dir %s", p.role, p.pid, p.cwd, p.env["HOME"], p.localDir())
		for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
			if p.env[k] == "" {
				t.Errorf("%s (pid %d) has no %s: it did not get the Secret", p.role, p.pid, k)
			}
		}
	}
	for _, p := range seen {
		if p.role == "executor" && p.localDir() == "" {
			t.Errorf("executor pid %d has no local-dir volume of its own", p.pid)
		}
	}
	if roles["driver"] != 1 || roles["executor"] != 2 {
		t.Fatalf("saw %v processes of the application, want 1 driver and 2 executors", roles)
	}
	for _, a := range places {
		for _, b := range places {
			if a.pid != b.pid && within(a.dir, b.dir) {
				t.Errorf("the %s of pid %d (%s) is inside the %s of pid %d (%s)", a.what, a.pid, a.dir, b.what, b.pid, b.dir)
			}
		}
	}
}

func within(dir, parent string) bool {
	rel, err := filepath.Rel(parent, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// appProcess is a process seen running the application's binary.
type appProcess struct {
	pid  int
	role string // driver or executor
	cwd  string
	env  map[string]string
}

// localDir is where an executor keeps its shuffle files: the process
// node's copy of its local-dir volume (executor.OptionsFromEnv); none for
// the driver, which keeps no data.
func (p appProcess) localDir() string {
	if p.role != "executor" {
		return ""
	}
	return p.env[envvar.LocalDirVolume]
}

type processWatch struct {
	stopc chan struct{}
	wg    sync.WaitGroup
	seen  map[int]appProcess
}

// watchProcesses records, every 10 ms until stop, the processes running
// binary: their working directory and environment.
func watchProcesses(t *testing.T, binary string) *processWatch {
	w := &processWatch{stopc: make(chan struct{}), seen: map[int]appProcess{}}
	w.wg.Go(func() {
		for {
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				var pid int
				if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
					continue
				}
				if _, ok := w.seen[pid]; ok {
					continue
				}
				exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
				if err != nil || exe != binary {
					continue
				}
				cwd, err1 := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
				environ, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
				if err1 != nil || err2 != nil || len(environ) == 0 {
					// An empty environment is a process caught inside
					// execve: its new image is mapped, its stack not yet
					// set up. Look again on the next tick.
					continue
				}
				p := appProcess{pid: pid, cwd: cwd, env: map[string]string{}}
				for _, kv := range strings.Split(string(environ), "\x00") {
					if k, v, ok := strings.Cut(kv, "="); ok {
						p.env[k] = v
					}
				}
				p.role = "driver"
				if p.env[envvar.Role] == envvar.RoleExecutor {
					p.role = "executor"
				}
				w.seen[pid] = p
			}
			select {
			case <-w.stopc:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *processWatch) stop() map[int]appProcess {
	select {
	case <-w.stopc:
	default:
		close(w.stopc)
	}
	w.wg.Wait()
	return w.seen
}
