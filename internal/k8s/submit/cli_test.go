package submit_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds the drover CLI and examples/wordcount once.
func binaries(t testing.TB) (drover, wordcount string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "drover-submit-e2e-")
		if buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", binDir+"/",
			"github.com/drover-project/drover/cmd/drover", "github.com/drover-project/drover/examples/wordcount",
			"github.com/drover-project/drover/internal/k8s/submit/testdata/panicapp",
			"github.com/drover-project/drover/internal/k8s/submit/testdata/sleepapp",
			"github.com/drover-project/drover/internal/k8s/submit/testdata/chaosapp",
			"github.com/drover-project/drover/internal/k8s/submit/testdata/uiapp",
			"github.com/drover-project/drover/internal/k8s/submit/testdata/envapp",
			"github.com/drover-project/drover/internal/k8s/submit/testdata/logapp",
			"github.com/drover-project/drover/internal/k8s/submit/testdata/restartapp").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "drover"), filepath.Join(binDir, "wordcount")
}

// result is one run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

// drover runs the CLI with KUBECONFIG kubeconfig, bounded by timeout.
func drover(t testing.TB, kubeconfig string, timeout time.Duration, args ...string) result {
	t.Helper()
	r := <-startDrover(t, kubeconfig, timeout, args...)
	if r.code == -1 {
		t.Fatalf("drover %s: %s", strings.Join(args, " "), r.stderr)
	}
	return r
}

// startDrover runs the CLI as drover does, in the background: the result
// comes once it ended, with code -1 if it did not within timeout or could
// not run (stderr then says so at its end). Only the test's goroutine may
// end a test, so this one never does.
func startDrover(t testing.TB, kubeconfig string, timeout time.Duration, args ...string) <-chan result {
	t.Helper()
	bin, _ := binaries(t)
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		r := result{stdout: stdout.String(), stderr: stderr.String()}
		ee, exited := err.(*exec.ExitError)
		switch {
		case ctx.Err() != nil:
			r.code, r.stderr = -1, fmt.Sprintf("did not end within %s; stderr:\n%s", timeout, r.stderr)
		case exited:
			r.code = ee.ExitCode()
		case err != nil:
			r.code, r.stderr = -1, fmt.Sprintf("running it: %v; stderr:\n%s", err, r.stderr)
		}
		done <- r
	}()
	return done
}

// TestClientMode runs the local binary with submit's flags: the driver
// runs here, and its exit code is submit's.
func TestClientMode(t *testing.T) {
	_, wordcount := binaries(t)
	input := filepath.Join(t.TempDir(), "input.txt")
	if err := os.WriteFile(input, []byte("a b a\nc a b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := drover(t, "/nonexistent", time.Minute, "submit", "--master", "local[2]", "--name", "wc",
		"--conf", "spark.ui.showConsoleProgress=false", wordcount, input, "2")
	if r.code != 0 || r.stdout != "a\t3\nb\t2\n" {
		t.Errorf("client mode: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = drover(t, "/nonexistent", time.Minute, "submit", "--master", "local[2]", wordcount)
	if r.code != 1 || !strings.Contains(r.stderr, "usage: wordcount") {
		t.Errorf("client mode, failing: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// BenchmarkHelp is the process time of drover --help: the CLI's start-up.
func BenchmarkHelp(b *testing.B) {
	bin, _ := binaries(b)
	for b.Loop() {
		if out, err := exec.Command(bin, "--help").CombinedOutput(); err != nil {
			b.Fatalf("drover --help: %v\n%s", err, out)
		}
	}
}
