package drover

import (
	"bytes"
	"strings"
	"testing"
)

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
