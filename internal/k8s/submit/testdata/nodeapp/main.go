// Command nodeapp is a word count for the real-node tests, whose map task
// of partition 0 misbehaves as $NODEAPP_FAULT says when it runs on one of
// the application's first two executors (ids 1 and 2), not on those that
// replace them:
//
//   - "oom": allocates and touches memory until the kernel's OOM killer
//     ends the container at its memory limit;
//   - "fill": writes into $NODEAPP_FILL_DIR until the kubelet evicts the
//     pod for exceeding its emptyDir's sizeLimit;
//   - "hang": waits, ignoring its context, until the container is killed.
//
// Before it misbehaves the task prints "nodeapp: <fault> starting" to the
// executor's output. Its retry on a replacement, and every other task,
// counts words as usual (the executor's id, not the task's attempt, says
// which: a task whose executor was evicted is not a failed attempt); the driver prints "word\tcount" lines sorted by word between
// "nodeapp: counts" and "nodeapp: end".
//
//	nodeapp <input>
package main

import (
	"cmp"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/drover-project/drover"
	"github.com/drover-project/drover/internal/envvar"
)

// chunk is what the "oom" and "fill" faults add at a time.
const chunk = 8 << 20

// held keeps the "oom" fault's memory reachable, so the collector cannot
// free it below the limit.
var held [][]byte

var words = drover.RegisterMapPartitions("nodeapp.words", func(tc *drover.TaskContext, lines iter.Seq[string], emit func(drover.KV[string, int])) error {
	id := os.Getenv(envvar.ExecutorID)
	if fault := os.Getenv("NODEAPP_FAULT"); fault != "" && tc.Partition() == 0 && (id == "1" || id == "2") {
		fmt.Printf("nodeapp: %s starting\n", fault)
		if err := misbehave(fault); err != nil {
			return err
		}
	}
	for line := range lines {
		for w := range strings.FieldsSeq(line) {
			emit(drover.KV[string, int]{Key: w, Value: 1})
		}
	}
	return nil
})

// misbehave does what fault says; it returns only if what should have
// ended the container did not, within ten minutes.
func misbehave(fault string) error {
	deadline := time.Now().Add(10 * time.Minute)
	switch fault {
	case "oom":
		for time.Now().Before(deadline) {
			b := make([]byte, chunk)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1 // touch every page: resident, charged to the cgroup
			}
			held = append(held, b)
			time.Sleep(10 * time.Millisecond)
		}
	case "fill":
		f, err := os.Create(filepath.Join(os.Getenv("NODEAPP_FILL_DIR"), "fill"))
		if err != nil {
			return err
		}
		defer f.Close()
		b := make([]byte, chunk)
		for time.Now().Before(deadline) {
			if _, err := f.Write(b); err != nil {
				time.Sleep(time.Second) // full: wait for the eviction
			}
			time.Sleep(100 * time.Millisecond)
		}
	case "hang":
		time.Sleep(time.Until(deadline))
	default:
		return fmt.Errorf("NODEAPP_FAULT=%q: want oom, fill or hang", fault)
	}
	return fmt.Errorf("nodeapp: %s did not end the container", fault)
}

var sum = drover.RegisterReduce("nodeapp.sum", func(a, b int) int { return a + b })

func main() {
	drover.Main(func(ctx *drover.Context) error {
		if len(ctx.Args()) != 1 {
			return fmt.Errorf("usage: nodeapp <input>")
		}
		counts, err := drover.ReduceByKey(drover.MapPartitions(drover.TextFile(ctx, ctx.Args()[0]), words), sum, 2).Collect()
		if err != nil {
			return err
		}
		slices.SortFunc(counts, func(a, b drover.KV[string, int]) int { return cmp.Compare(a.Key, b.Key) })
		fmt.Println("nodeapp: counts")
		for _, kv := range counts {
			fmt.Printf("%s\t%d\n", kv.Key, kv.Value)
		}
		fmt.Println("nodeapp: end")
		return nil
	})
}
