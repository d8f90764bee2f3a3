package drover

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitPartsRejectsPaths: a partition file name from an executor
// that is a path fails the commit, and moves nothing.
func TestCommitPartsRejectsPaths(t *testing.T) {
	for _, name := range []string{"../victim", "..", ".", "", "a/b", `a\\b`, "/etc/passwd"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			attempts, staging := filepath.Join(root, "staging", "_temporary"), filepath.Join(root, "staging")
			if err := os.MkdirAll(attempts, 0o755); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(staging, "victim")
			if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(attempts, "good"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := commitParts(attempts, staging, []string{"good", name}, "")
			if err == nil || !strings.Contains(err.Error(), "partition 1") {
				t.Fatalf("commitParts with %q: %v, want an error naming partition 1", name, err)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Errorf("the file outside the attempts directory moved: %v", err)
			}
			if _, err := os.Stat(filepath.Join(staging, "part-00000")); err == nil {
				t.Error("a partition was committed although another's name was bad")
			}
		})
	}
}

var payloadLen = Register("test.payloadLen", func(_ *TaskContext, b []byte) (int, error) { return len(b), nil })

// TestTaskOverMessageMaxSize: under local-cluster (real executor
// processes), a task whose input is over spark.rpc.message.maxSize fails
// its job at once with the key and the size named, and a job of tasks that
// fit, batched past the cap together, succeeds.
func TestTaskOverMessageMaxSize(t *testing.T) {
	var stderr bytes.Buffer
	var tooBig, fits error
	var lens []int
	code := runDriver([]string{"--master", "local-cluster[1,2,512]", "--conf", "spark.rpc.message.maxSize=1m",
		"--conf", "drover.log.level=error"}, &stderr, func(ctx *Context) error {
		_, tooBig = RunPartitions(ctx, payloadLen, [][]byte{make([]byte, 10), make([]byte, 2<<20)})
		// Eight tasks of 300 KiB: more than 1 MiB in all, sent in batches.
		in := make([][]byte, 8)
		for i := range in {
			in[i] = make([]byte, 300<<10)
		}
		lens, fits = RunPartitions(ctx, payloadLen, in)
		return nil
	})
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	if tooBig == nil || !strings.Contains(tooBig.Error(), "spark.rpc.message.maxSize") {
		t.Errorf("the job with a 2 MiB task: %v, want spark.rpc.message.maxSize named", tooBig)
	}
	if fits != nil || len(lens) != 8 || lens[7] != 300<<10 {
		t.Errorf("the job of tasks that fit: %v, %v", lens, fits)
	}
}
