// Command restartapp is a word count with a sort stage, for the driver
// restart tests: read → reduceByKey → sortByKey → save. It reads
// <input>, counts the words in 4 partitions, sorts them by word and saves
// "word\tcount" lines to <output> (a local directory or s3:// prefix).
//
// Its functions tell the test where the job is: each task of the sort's
// map side creates "sortmap-<attempt>-<partition>" in
// $RESTARTAPP_MARKER_DIR (when set) as it starts and waits
// $RESTARTAPP_SORT_DELAY; each task of the save stage creates
// "save-<attempt>-<partition>" and waits $RESTARTAPP_SAVE_DELAY. After the
// save the driver creates "saved-<attempt>" and waits
// $RESTARTAPP_EXIT_DELAY before it exits. <attempt> is the driver's
// attempt that ran the task: attempt n numbers its tasks from (n-1)<<40. Delays are Go durations, none by default, and apply to
// the driver's first attempt only, so a restarted driver runs at full
// speed: the exit delay where drover.Context.AttemptID is "1", the tasks'
// where their id is below 1<<40 (attempt n numbers its tasks from
// (n-1)<<40); with $RESTARTAPP_SLOW_ALWAYS set, in every attempt.
//
//	restartapp <input> <output>
package main

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover"
)

var words = drover.RegisterFlatMap("restartapp.words", func(line string, emit func(drover.KV[string, int])) {
	for w := range strings.FieldsSeq(line) {
		emit(drover.KV[string, int]{Key: w, Value: 1})
	}
})

var sum = drover.RegisterReduce("restartapp.sum", func(a, b int) int { return a + b })

// pace marks the task's start as name-<attempt>-<partition> and waits the
// delay of $env, unless the task is cancelled.
func pace(tc *drover.TaskContext, name, env string) error {
	if dir := os.Getenv("RESTARTAPP_MARKER_DIR"); dir != "" {
		marker := fmt.Sprintf("%s-%d-%d", name, tc.TaskID()>>40+1, tc.Partition())
		if f, err := os.Create(filepath.Join(dir, marker)); err == nil {
			f.Close()
		}
	}
	first := tc.TaskID() < 1<<40 || os.Getenv("RESTARTAPP_SLOW_ALWAYS") != ""
	if d, err := time.ParseDuration(os.Getenv(env)); err == nil && d > 0 && first {
		select {
		case <-time.After(d):
		case <-tc.Done():
			return tc.Err()
		}
	}
	return nil
}

// The delays reach the executors through spark.executorEnv.*.
var sortMap = drover.RegisterMapPartitions("restartapp.sortmap", func(tc *drover.TaskContext, in iter.Seq[drover.KV[string, int]],
	emit func(drover.KV[string, int])) error {
	if err := pace(tc, "sortmap", "RESTARTAPP_SORT_DELAY"); err != nil {
		return err
	}
	for kv := range in {
		emit(kv)
	}
	return nil
})

var format = drover.RegisterMapPartitions("restartapp.format", func(tc *drover.TaskContext, in iter.Seq[drover.KV[string, int]],
	emit func(string)) error {
	if err := pace(tc, "save", "RESTARTAPP_SAVE_DELAY"); err != nil {
		return err
	}
	for kv := range in {
		emit(kv.Key + "\t" + strconv.Itoa(kv.Value))
	}
	return nil
})

func main() {
	drover.Main(func(ctx *drover.Context) error {
		if len(ctx.Args()) != 2 {
			return fmt.Errorf("usage: restartapp <input> <output>")
		}
		counts := drover.ReduceByKey(drover.FlatMap(drover.TextFile(ctx, ctx.Args()[0]), words), sum, 4)
		sorted := drover.SortByKey(drover.MapPartitions(counts, sortMap), true, 4)
		if err := drover.MapPartitions(sorted, format).SaveAsTextFile(ctx.Args()[1]); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "restartapp: saved %s (attempt %q)\n", ctx.Args()[1], ctx.AttemptID())
		if dir := os.Getenv("RESTARTAPP_MARKER_DIR"); dir != "" {
			if f, err := os.Create(filepath.Join(dir, "saved-"+ctx.AttemptID())); err == nil {
				f.Close()
			}
			if d, err := time.ParseDuration(os.Getenv("RESTARTAPP_EXIT_DELAY")); err == nil && ctx.AttemptID() == "1" {
				time.Sleep(d)
			}
		}
		return nil
	})
}
