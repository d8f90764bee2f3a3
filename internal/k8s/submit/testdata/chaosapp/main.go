// Command chaosapp is a word count whose map tasks take a while, for
// submit's chaos tests: each map task creates the file "map" in
// $CHAOSAPP_MARKER_DIR (when set) as it starts, so a test strikes while the
// job runs, then waits $CHAOSAPP_TASK_DELAY (a Go duration, default none)
// before it counts its lines. The driver prints every word's count,
// "word\tcount" sorted by word, between the lines "chaosapp: counts" and
// "chaosapp: end".
//
//	chaosapp <file>
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
)

var words = drover.RegisterMapPartitions("chaosapp.words", func(tc *drover.TaskContext, lines iter.Seq[string], emit func(drover.KV[string, int])) error {
	if dir := os.Getenv("CHAOSAPP_MARKER_DIR"); dir != "" {
		if f, err := os.OpenFile(filepath.Join(dir, "map"), os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		}
	}
	if d, err := time.ParseDuration(os.Getenv("CHAOSAPP_TASK_DELAY")); err == nil && d > 0 {
		select {
		case <-time.After(d):
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

var sum = drover.RegisterReduce("chaosapp.sum", func(a, b int) int { return a + b })

func main() {
	drover.Main(func(ctx *drover.Context) error {
		if len(ctx.Args()) != 1 {
			return fmt.Errorf("usage: chaosapp <file>")
		}
		counts, err := drover.ReduceByKey(drover.MapPartitions(drover.TextFile(ctx, ctx.Args()[0]), words), sum, 4).Collect()
		if err != nil {
			return err
		}
		slices.SortFunc(counts, func(a, b drover.KV[string, int]) int { return cmp.Compare(a.Key, b.Key) })
		fmt.Println("chaosapp: counts")
		for _, kv := range counts {
			fmt.Printf("%s\t%d\n", kv.Key, kv.Value)
		}
		fmt.Println("chaosapp: end")
		return nil
	})
}
