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
		// A task that ended soon after its launch comes with its start.
		r.events = append(r.events, events.Apart(e)...)
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
				sum.Add(te.Metrics)
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

// jobMetrics sums the metrics of the successful task ends of each job, in
// job order.
func (r *recordEvents) jobMetrics() []events.TaskMetrics {
	jobOfStage := map[int]int64{}
	var jobs []int64
	sums := map[int64]*events.TaskMetrics{}
	for _, e := range r.events {
		switch e := e.(type) {
		case *events.JobStart:
			jobs = append(jobs, e.JobID)
			sums[e.JobID] = &events.TaskMetrics{}
		case *events.StageSubmitted:
			jobOfStage[e.StageID] = e.JobID
		case *events.TaskEnd:
			if s := sums[jobOfStage[e.StageID]]; s != nil && e.State == events.TaskSuccess {
				s.Add(e.Metrics)
			}
		}
	}
	var out []events.TaskMetrics
	for _, j := range jobs {
		out = append(out, *sums[j])
	}
	return out
}

func fileSizes(t *testing.T, pattern string) (total int64) {
	t.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no files %s: %v", pattern, err)
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	return total
}

// Compressed files count their bytes as stored; Parquet files the bytes
// their footers and columns take, and their rows; SaveAsParquet what it
// wrote.
func TestInputMetricsOfCompressedAndParquetFiles(t *testing.T) {
	dir := t.TempDir()
	lines := generatedLines(3000)
	if err := os.MkdirAll(filepath.Join(dir, "text"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"a.txt.gz": gzipText(t, strings.Join(lines[:1000], "\n")+"\n"),
		"b.zst":    zstdText(t, strings.Join(lines[1000:], "\n")),
	} {
		if err := os.WriteFile(filepath.Join(dir, "text", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sales := pqSales(5000)
	out := filepath.Join(dir, "sales")
	var rec recordEvents
	runJob(t, "local[2]", func(ctx *Context) error {
		rec.subscribe(ctx)
		if n, err := TextFile(ctx, filepath.Join(dir, "text", "*")).Count(); err != nil || n != int64(len(lines)) {
			t.Errorf("counted %d lines, %v", n, err)
		}
		if err := Parallelize(ctx, sales, 4).SaveAsParquet(out); err != nil {
			return err
		}
		_, err := ReadParquet[pqSale](ctx, out).Count()
		return err
	})
	jobs := rec.jobMetrics()
	if len(jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(jobs))
	}
	text, save, read := jobs[0], jobs[1], jobs[2]
	if compressed := fileSizes(t, filepath.Join(dir, "text", "*")); text.InputBytes != compressed || text.InputRecords != int64(len(lines)) {
		t.Errorf("reading compressed text: %d bytes, %d records; want the files' %d bytes and %d lines",
			text.InputBytes, text.InputRecords, compressed, len(lines))
	}
	parts := fileSizes(t, filepath.Join(out, "part-*"))
	if save.OutputBytes != parts || save.OutputRecords != int64(len(sales)) {
		t.Errorf("SaveAsParquet: %d bytes, %d records; want the parts' %d bytes and %d rows", save.OutputBytes, save.OutputRecords, parts, len(sales))
	}
	if read.InputRecords != int64(len(sales)) || read.InputBytes <= 0 || read.InputBytes > parts {
		t.Errorf("ReadParquet: %d bytes, %d records; want %d rows from at most the files' %d bytes", read.InputBytes, read.InputRecords, len(sales), parts)
	}
}
