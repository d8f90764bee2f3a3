package drover

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/drover-project/drover/internal/events"
)

var (
	testDigitKey  = RegisterMap("test.digitKey", func(line string) KV[int64, string] { return KV[int64, string]{Key: int64(line[5] - '0'), Value: line} })
	testGroupLine = RegisterMap("test.groupLine", func(kv KV[int64, []string]) string { return fmt.Sprintf("%d %d", kv.Key, len(kv.Value)) })
)

// recordEvents subscribes to the application's events from inside its
// function; once the driver returned, the bus is closed and every event
// has been handled.
type recordEvents struct {
	mu     sync.Mutex
	events []events.Event
}

func (r *recordEvents) subscribe(ctx *Context) {
	ctx.events.Subscribe("test", 1<<20, func(e events.Event) {
		r.mu.Lock()
		r.events = append(r.events, e)
		r.mu.Unlock()
	})
}

// Executors measure what each task reads, writes and spills, and the
// driver's TaskEnd events carry it: a file read into a shuffle that spills
// and is saved as text, on both masters that run tasks (in the driver's
// process and in executor processes).
func TestTaskMetricsReachTaskEndEvents(t *testing.T) {
	const lines = 100_000
	var text strings.Builder
	for i := range lines {
		fmt.Fprintf(&text, "%06d%094d\n", i, i)
	}
	input := filepath.Join(t.TempDir(), "input.txt")
	if err := os.WriteFile(input, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, master := range []string{"local[2]", "local-cluster[2,1,256]"} {
		t.Run(master, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var rec recordEvents
			runJob(t, master, func(ctx *Context) error {
				rec.subscribe(ctx)
				groups := GroupByKey(Map(TextFile(ctx, input), testDigitKey), 3)
				return Map(groups, testGroupLine).SaveAsTextFile(out)
			}, "spark.memory.fraction=0.005", "spark.files.maxPartitionBytes=3m")

			// The map stage, submitted first, reads the file; the stage
			// after it reads the shuffle.
			var stages []int
			for _, e := range rec.events {
				if s, ok := e.(*events.StageSubmitted); ok {
					stages = append(stages, s.StageID)
				}
			}
			if len(stages) != 2 {
				t.Fatalf("stages submitted: %v, want a map stage and a result stage", stages)
			}
			reduceStage := map[int]bool{stages[1]: true}
			var mapSide, reduceSide events.TaskMetrics
			var mapTasks, reduceTasks int
			for _, e := range rec.events {
				te, ok := e.(*events.TaskEnd)
				if !ok || te.State != events.TaskSuccess {
					continue
				}
				sum, n := &mapSide, &mapTasks
				if reduceStage[te.StageID] {
					sum, n = &reduceSide, &reduceTasks
				}
				*n++
				add(sum, te.Metrics)
				if !reduceStage[te.StageID] && te.Metrics.ShuffleWriteBytes == 0 {
					t.Errorf("map task %d reports no shuffle write: %+v", te.TaskID, te.Metrics)
				}
			}
			if mapTasks < 2 || reduceTasks != 3 {
				t.Fatalf("%d map and %d reduce tasks succeeded, want at least 2 and 3", mapTasks, reduceTasks)
			}
			if mapSide.InputRecords != lines || mapSide.InputBytes != int64(text.Len()) {
				t.Errorf("map stage read %d records, %d bytes; want %d records, the file's %d bytes",
					mapSide.InputRecords, mapSide.InputBytes, lines, text.Len())
			}
			if mapSide.ShuffleWriteRecords != lines || mapSide.ShuffleWriteBytes < int64(text.Len()) {
				t.Errorf("map stage wrote %d records, %d bytes to the shuffle; want %d records, at least %d bytes",
					mapSide.ShuffleWriteRecords, mapSide.ShuffleWriteBytes, lines, text.Len())
			}
			if reduceSide.ShuffleReadBytes != mapSide.ShuffleWriteBytes || reduceSide.ShuffleReadRecords != mapSide.ShuffleWriteRecords {
				t.Errorf("the reduce stage read %d bytes, %d records from the shuffle; the map stage wrote %d bytes, %d records",
					reduceSide.ShuffleReadBytes, reduceSide.ShuffleReadRecords, mapSide.ShuffleWriteBytes, mapSide.ShuffleWriteRecords)
			}
			if reduceSide.SpillBytes == 0 {
				t.Errorf("the grouping spilled nothing under spark.memory.fraction=0.005: %+v", reduceSide)
			}
			if mapSide.SpillBytes != 0 || mapSide.ShuffleReadBytes != 0 || mapSide.OutputBytes != 0 {
				t.Errorf("the map stage reports reduce-side metrics: %+v", mapSide)
			}
			var saved int64
			parts, _ := filepath.Glob(filepath.Join(out, "part-*"))
			for _, p := range parts {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				saved += fi.Size()
			}
			if reduceSide.OutputRecords != 10 || reduceSide.OutputBytes != saved || saved == 0 {
				t.Errorf("the reduce stage wrote %d records, %d bytes; want 10 records and the %d bytes of %d part files",
					reduceSide.OutputRecords, reduceSide.OutputBytes, saved, len(parts))
			}
			t.Logf("map side %+v", mapSide)
			t.Logf("reduce side %+v", reduceSide)
		})
	}
}

func add(sum *events.TaskMetrics, m events.TaskMetrics) {
	sum.ResultBytes += m.ResultBytes
	sum.InputBytes += m.InputBytes
	sum.InputRecords += m.InputRecords
	sum.OutputBytes += m.OutputBytes
	sum.OutputRecords += m.OutputRecords
	sum.ShuffleReadBytes += m.ShuffleReadBytes
	sum.ShuffleReadRecords += m.ShuffleReadRecords
	sum.ShuffleWriteBytes += m.ShuffleWriteBytes
	sum.ShuffleWriteRecords += m.ShuffleWriteRecords
	sum.SpillBytes += m.SpillBytes
}
