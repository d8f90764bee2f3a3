// Command logapp is a word count whose map tasks talk, for the kept-log
// tests (issue 41): each map task prints, on standard error, the line
//
//	logapp marker executor=<id> task=<n> seq=<k> time=<RFC3339Nano>
//
// every $LOGAPP_MARKER_EVERY (a Go duration, 100ms by default) for
// $LOGAPP_TASK_TIME (default 3s) before it counts its lines, so that an
// executor has output up to the moment it is killed. <id> is the
// executor's id, <n> the task's id, and <k> numbers the process's markers
// from 1 without a gap, so that a test sees which of them a log lost. The
// driver counts the words of <input> (a file or a directory: one map task
// a file) in 4 partitions, saves "word\tcount" lines to <output> (a local
// directory or s3:// prefix), and prints on standard output
//
//	logapp: job took <seconds> s
//
// the time of the job (from the action's start to its end).
//
//	logapp <input> <output>
package main

import (
	"fmt"
	"iter"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover"
	"github.com/drover-project/drover/internal/envvar"
)

var seq atomic.Int64

func env(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

var words = drover.RegisterMapPartitions("logapp.words", func(tc *drover.TaskContext, lines iter.Seq[string], emit func(drover.KV[string, int])) error {
	every, total := env("LOGAPP_MARKER_EVERY", 100*time.Millisecond), env("LOGAPP_TASK_TIME", 3*time.Second)
	id := os.Getenv(envvar.ExecutorID)
	tick := time.NewTicker(every)
	defer tick.Stop()
	end := time.After(total)
	for done := false; !done; {
		fmt.Fprintf(os.Stderr, "logapp marker executor=%s task=%d seq=%d time=%s\n",
			id, tc.TaskID(), seq.Add(1), time.Now().UTC().Format(time.RFC3339Nano))
		select {
		case <-tick.C:
		case <-end:
			done = true
		case <-tc.Done():
			return tc.Err()
		}
	}
	for line := range lines {
		for w := range strings.FieldsSeq(line) {
			emit(drover.KV[string, int]{Key: w, Value: 1})
		}
	}
	return nil
})

var sum = drover.RegisterReduce("logapp.sum", func(a, b int) int { return a + b })

var format = drover.RegisterMap("logapp.format", func(kv drover.KV[string, int]) string {
	return kv.Key + "\t" + strconv.Itoa(kv.Value)
})

func main() {
	drover.Main(func(ctx *drover.Context) error {
		if len(ctx.Args()) != 2 {
			return fmt.Errorf("usage: logapp <input> <output>")
		}
		start := time.Now()
		counts := drover.ReduceByKey(drover.MapPartitions(drover.TextFile(ctx, ctx.Args()[0]), words), sum, 4)
		if err := drover.Map(counts, format).SaveAsTextFile(ctx.Args()[1]); err != nil {
			return err
		}
		fmt.Printf("logapp: job took %.3f s\n", time.Since(start).Seconds())
		return nil
	})
}
