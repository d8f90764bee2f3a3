package drover

import (
	"bytes"
	"cmp"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/dataflow"
)

// Functions of the dataset tests, registered like an application's.
var (
	testWords = RegisterFlatMap("test.words", func(line string, emit func(KV[string, int])) {
		for _, w := range strings.Fields(line) {
			emit(KV[string, int]{Key: w, Value: 1})
		}
	})
	testSum      = RegisterReduce("test.sum", func(a, b int) int { return a + b })
	testSum64    = RegisterReduce("test.sum64", func(a, b int64) int64 { return a + b })
	testMod      = RegisterMap("test.mod7", func(n int64) int64 { return n % 7 })
	testIsEven   = RegisterFilter("test.even", func(n int64) bool { return n%2 == 0 })
	testToPair   = RegisterMap("test.pair", func(n int64) KV[int64, string] { return KV[int64, string]{Key: n % 10, Value: fmt.Sprint(n)} })
	testKeyLen   = RegisterMap("test.len", func(s string) int { return len(s) })
	testPanicBad = RegisterMap("test.panicBad", func(s string) string {
		if s == "bad" {
			panic("cannot handle " + s)
		}
		return strings.ToUpper(s)
	})
	testCountLen = RegisterFold("test.countLen", func(acc [2]int64, v string) [2]int64 { return [2]int64{acc[0] + 1, acc[1] + int64(len(v))} })
	testAddPairs = RegisterReduce("test.addPairs", func(a, b [2]int64) [2]int64 { return [2]int64{a[0] + b[0], a[1] + b[1]} })
	testRunSum   = RegisterMapPartitions("test.partitionSum", func(_ *TaskContext, in iter.Seq[int64], emit func(int64)) error {
		var s int64
		for v := range in {
			s += v
		}
		emit(s)
		return nil
	})
	testSeen    atomic.Int64
	testForeach = RegisterForeach("test.foreach", func(_ *TaskContext, v int64) error { testSeen.Add(v); return nil })
	// testKillOnce ends its own executor process the first time it runs,
	// after the shuffle it reads: the map outputs that executor held are
	// lost in the middle of the job.
	testKillOnce = RegisterMap("test.killOnce", func(kv KV[string, int]) KV[string, int] {
		if marker := os.Getenv("DROVER_TEST_KILL_MARKER"); marker != "" {
			if f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
				f.Close()
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				time.Sleep(time.Minute) // real time: the kernel ends this process meanwhile
			}
		}
		return kv
	})
	// testKillLast ends its own executor process once, in partition 4,
	// after a second: by then the other partitions of the stage are done.
	testKillLast = RegisterMapPartitions("test.killLast", func(tc *TaskContext, in iter.Seq[KV[string, int]], emit func(KV[string, int])) error {
		if marker := os.Getenv("DROVER_TEST_KILL_MARKER"); marker != "" && tc.Partition() == 4 {
			if f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
				f.Close()
				time.Sleep(time.Second) // real time: the other executor processes finish their partitions
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				time.Sleep(time.Minute) // real time: the kernel ends this process meanwhile
			}
		}
		for kv := range in {
			emit(kv)
		}
		return nil
	})
	testIsHot = RegisterFilter("test.isHot", func(kv KV[int64, [2]int64]) bool { return kv.Key == -1 })
	testSkew  = RegisterFlatMap("test.skew", func(n int64, emit func(KV[int64, string])) {
		value := strings.Repeat("v", 90)
		if n%2 == 0 {
			emit(KV[int64, string]{Key: -1, Value: value}) // the hot key: half of the data
		} else {
			emit(KV[int64, string]{Key: n, Value: value})
		}
	})
)

// runJob runs job as a driver on master and fails the test if it fails.
func runJob(t *testing.T, master string, job func(ctx *Context) error, conf ...string) {
	t.Helper()
	args := []string{"--master", master, "--conf", "drover.log.level=" + cmp.Or(os.Getenv("DROVER_TEST_LOG_LEVEL"), "warn")}
	for _, c := range conf {
		args = append(args, "--conf", c)
	}
	var stderr bytes.Buffer
	if code := runDriver(args, &stderr, job); code != 0 {
		t.Fatalf("job on %s: exit code %d:\n%s", master, code, stderr.String())
	}
	if os.Getenv("DROVER_TEST_SHOW_LOG") != "" {
		t.Log(stderr.String())
	}
}

func writeText(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "input.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func referenceWordCount(lines []string) map[string]int {
	want := map[string]int{}
	for _, l := range lines {
		for _, w := range strings.Fields(l) {
			want[w]++
		}
	}
	return want
}

func generatedLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		var b strings.Builder
		for j := range 1 + i%7 {
			fmt.Fprintf(&b, "w%d ", (i*31+j*17)%97)
		}
		lines[i] = b.String()
	}
	return lines
}

var masters = []string{"local[*]", "local-cluster[3,1,256]"}

func TestWordCountMatchesReference(t *testing.T) {
	lines := generatedLines(5000)
	path := writeText(t, lines)
	want := referenceWordCount(lines)
	for _, master := range masters {
		t.Run(master, func(t *testing.T) {
			runJob(t, master, func(ctx *Context) error {
				counts, err := ReduceByKey(FlatMap(TextFile(ctx, path), testWords), testSum, 4).Collect()
				if err != nil {
					return err
				}
				if diff := gocmp.Diff(want, countsMap(t, counts)); diff != "" {
					t.Errorf("word counts (-want +got):\n%s", diff)
				}
				return nil
			}, "spark.files.maxPartitionBytes=7000") // many splits: lines cut at split ends
		})
	}
}

func TestSortMatchesReference(t *testing.T) {
	const n = 20000
	want := make([]KV[int64, string], n)
	for i := range want {
		v := int64(i)*7919%n - n/2
		want[i] = KV[int64, string]{Key: v, Value: fmt.Sprint(v)}
	}
	input := slices.Clone(want)
	slices.SortFunc(want, func(a, b KV[int64, string]) int { return cmp.Compare(b.Key, a.Key) })
	for _, master := range masters {
		t.Run(master, func(t *testing.T) {
			runJob(t, master, func(ctx *Context) error {
				sorted := SortByKey(Parallelize(ctx, input, 5), false, 4)
				got, err := sorted.Collect()
				if err != nil {
					return err
				}
				if diff := gocmp.Diff(want, got); diff != "" {
					t.Errorf("sorted records (-want +got):\n%s", diff)
				}
				// String keys, both directions; equal keys and the empty key too.
				words := []KV[string, int]{{Key: "pear", Value: 1}, {Key: "", Value: 2}, {Key: "apple", Value: 3},
					{Key: "pear", Value: 4}, {Key: "Zebra", Value: 5}, {Key: "apples", Value: 6}}
				for _, ascending := range []bool{true, false} {
					got, err := SortByKey(Parallelize(ctx, words, 3), ascending, 2).Collect()
					if err != nil {
						return err
					}
					keys := make([]string, len(got))
					for i, kv := range got {
						keys[i] = kv.Key
					}
					wantKeys := []string{"", "Zebra", "apple", "apples", "pear", "pear"}
					if !ascending {
						slices.Reverse(wantKeys)
					}
					if diff := gocmp.Diff(wantKeys, keys); diff != "" {
						t.Errorf("string keys, ascending=%v (-want +got):\n%s", ascending, diff)
					}
				}
				return nil
			})
		})
	}
}

func TestJoinMatchesReference(t *testing.T) {
	left := make([]int64, 300)
	for i := range left {
		left[i] = int64(i)
	}
	right := []KV[int64, string]{{Key: 1, Value: "one"}, {Key: 3, Value: "three"}, {Key: 3, Value: "trois"}, {Key: 42, Value: "none"}}
	type row struct {
		Key   int64
		Left  string
		Right string
		Valid bool
	}
	var wantInner, wantOuter []row
	for _, l := range left {
		k, lv := l%10, fmt.Sprint(l)
		matched := false
		for _, r := range right {
			if r.Key == k {
				wantInner = append(wantInner, row{k, lv, r.Value, true})
				wantOuter = append(wantOuter, row{k, lv, r.Value, true})
				matched = true
			}
		}
		if !matched {
			wantOuter = append(wantOuter, row{k, lv, "", false})
		}
	}
	sortRows := cmpopts.SortSlices(func(a, b row) bool {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Left, b.Left), cmp.Compare(a.Right, b.Right)) < 0
	})
	for _, master := range masters {
		t.Run(master, func(t *testing.T) {
			runJob(t, master, func(ctx *Context) error {
				l := Map(Parallelize(ctx, left, 4), testToPair)
				r := Parallelize(ctx, right, 2)
				inner, err := Join(l, r, 3).Collect()
				if err != nil {
					return err
				}
				outer, err := LeftOuterJoin(l, r, 0).Collect()
				if err != nil {
					return err
				}
				var gotInner, gotOuter []row
				for _, kv := range inner {
					gotInner = append(gotInner, row{kv.Key, kv.Value.Left, kv.Value.Right, true})
				}
				for _, kv := range outer {
					gotOuter = append(gotOuter, row{kv.Key, kv.Value.Left, kv.Value.Right.Value, kv.Value.Right.Valid})
				}
				if diff := gocmp.Diff(wantInner, gotInner, sortRows); diff != "" {
					t.Errorf("join (-want +got):\n%s", diff)
				}
				if diff := gocmp.Diff(wantOuter, gotOuter, sortRows); diff != "" {
					t.Errorf("left outer join (-want +got):\n%s", diff)
				}
				return nil
			})
		})
	}
}

func TestDatasetOperations(t *testing.T) {
	runJob(t, "local-cluster[2,2,256]", func(ctx *Context) error {
		nums := Range(ctx, 0, 1000, 1, 6)
		check := func(name string, got, want any) {
			t.Helper()
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", name, diff)
			}
		}
		n, err := nums.Filter(testIsEven).Count()
		check("count of evens", n, int64(500))
		first, err2 := nums.Take(5)
		check("take", first, []int64{0, 1, 2, 3, 4})
		sum, err3 := nums.Reduce(testSum64)
		check("reduce", sum, int64(999*1000/2))
		perPart, err4 := MapPartitions(nums.Coalesce(2), testRunSum).Collect()
		check("coalesce into 2 partitions", perPart, []int64{499 * 500 / 2, 999*1000/2 - 499*500/2})
		again, err5 := nums.Repartition(7).Collect()
		slices.Sort(again)
		check("repartition keeps every record", again, seqInt64(1000))
		grouped, err6 := GroupByKey(KeyBy(nums, testMod), 3).Collect()
		sizes := map[int64]int{}
		for _, g := range grouped {
			sizes[g.Key] = len(g.Value)
			for _, v := range g.Value {
				if v%7 != g.Key {
					t.Errorf("group %d holds %d", g.Key, v)
				}
			}
		}
		check("group sizes", sizes, map[int64]int{0: 143, 1: 143, 2: 143, 3: 143, 4: 143, 5: 143, 6: 142})
		words := Parallelize(ctx, []KV[string, string]{{Key: "a", Value: "xx"}, {Key: "b", Value: "y"}, {Key: "a", Value: "zzz"}}, 2)
		agg, err7 := AggregateByKey(words, [2]int64{}, testCountLen, testAddPairs, 2).Collect()
		got := map[string][2]int64{}
		for _, kv := range agg {
			got[kv.Key] = kv.Value
		}
		check("aggregate by key", got, map[string][2]int64{"a": {2, 5}, "b": {1, 1}})
		testSeen.Store(0)
		err8 := Range(ctx, 1, 11, 1, 3).Foreach(testForeach)
		lens, err9 := Map(Parallelize(ctx, []string{"a", "bb", ""}, 0), testKeyLen).Collect()
		check("map", lens, []int{1, 2, 0})
		empty, err10 := Parallelize(ctx, []int64{}, 2).Reduce(testSum64)
		check("reduce of nothing", empty, int64(0))
		if err10 != ErrEmpty {
			t.Errorf("Reduce of an empty dataset: err = %v, want ErrEmpty", err10)
		}
		for _, err := range []error{err, err2, err3, err4, err5, err6, err7, err8, err9} {
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func seqInt64(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i)
	}
	return s
}

func TestSaveAsTextFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	runJob(t, "local[2]", func(ctx *Context) error {
		pairs := Parallelize(ctx, []KV[string, int]{{Key: "a", Value: 1}, {Key: "b", Value: 2}, {Key: "c", Value: 3}}, 2)
		if err := pairs.SaveAsTextFile(dir); err != nil {
			return err
		}
		if err := pairs.SaveAsTextFile(dir); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("saving into an existing directory: err = %v, want 'already exists'", err)
		}
		return nil
	})
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var text string
	for _, e := range entries {
		names = append(names, e.Name())
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		text += string(b)
	}
	if diff := gocmp.Diff([]string{"_SUCCESS", "part-00000", "part-00001"}, names); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if want := "{a 1}\n{b 2}\n{c 3}\n"; text != want {
		t.Errorf("content = %q, want %q", text, want)
	}
}

func TestPanicOnBadRecordFailsJobAndLeavesNoOutput(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	var stderr bytes.Buffer
	var jobErr error
	code := runDriver([]string{"--master", "local-cluster[2,1,256]", "--conf", "spark.task.maxFailures=2", "--conf", "drover.log.level=error"}, &stderr,
		func(ctx *Context) error {
			jobErr = Map(Parallelize(ctx, []string{"ok", "fine", "bad", "good"}, 4), testPanicBad).SaveAsTextFile(dir)
			return jobErr
		})
	if code != 1 || jobErr == nil {
		t.Fatalf("exit code %d, err %v; want a failed job", code, jobErr)
	}
	for _, want := range []string{`test.panicBad panicked on record bad: cannot handle bad`, "failed 2 times"} {
		if !strings.Contains(jobErr.Error(), want) {
			t.Errorf("job error does not contain %q:\n%v", want, jobErr)
		}
	}
	left, _ := os.ReadDir(parent)
	if len(left) != 0 {
		t.Errorf("a failed job left %d entries in the output's parent directory: %v", len(left), left[0].Name())
	}
}

func TestDatasetBuildErrorsBeforeAnyTask(t *testing.T) {
	runJob(t, "local[2]", func(ctx *Context) error {
		_, err := Parallelize(ctx, []chan int{nil}, 1).Collect()
		if err == nil || !strings.Contains(err.Error(), "chan values cannot be encoded") {
			t.Errorf("parallelize of channels: err = %v", err)
		}
		_, err = TextFile(ctx, filepath.Join(t.TempDir(), "missing-*.txt")).Count()
		if err == nil || !strings.Contains(err.Error(), "no file matches") {
			t.Errorf("text file of nothing: err = %v", err)
		}
		if _, err := Range(ctx, 0, 5, 0, 1).Count(); err == nil {
			t.Error("range with step 0 succeeded")
		}
		return nil
	})
}

// TestExecutorKilledMidShuffle loses an executor process, with the map
// outputs it holds, after the map stage: the job still gets the right
// answer by recomputing the lost outputs.
func TestExecutorKilledMidShuffle(t *testing.T) {
	wordCountLosingAnExecutor(t, func(counts *Dataset[KV[string, int]]) ([]KV[string, int], error) {
		return Map(counts, testKillOnce).Collect()
	})
}

// wordCountLosingAnExecutor counts words on local-cluster[3,1,256] with
// collect, which computes the counts through a function that kills its
// executor once, and checks that every count comes out exactly once.
func wordCountLosingAnExecutor(t *testing.T, collect func(counts *Dataset[KV[string, int]]) ([]KV[string, int], error)) {
	t.Helper()
	lines := generatedLines(3000)
	path := writeText(t, lines)
	want := referenceWordCount(lines)
	marker := filepath.Join(t.TempDir(), "killed")
	t.Setenv("DROVER_TEST_KILL_MARKER", marker)
	runJob(t, "local-cluster[3,1,256]", func(ctx *Context) error {
		got, err := collect(ReduceByKey(FlatMap(TextFile(ctx, path), testWords), testSum, 6))
		if err != nil {
			return err
		}
		if diff := gocmp.Diff(want, mapOf(got)); diff != "" {
			t.Errorf("word counts after losing an executor (-want +got):\n%s", diff)
		}
		if len(got) != len(want) {
			t.Errorf("%d records, want %d: some counted twice or lost", len(got), len(want))
		}
		return nil
	}, "spark.files.maxPartitionBytes=4000")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no executor was killed: %v", err)
	}
}

func mapOf[K comparable, V any](kvs []KV[K, V]) map[K]V {
	m := make(map[K]V, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestSkewedKeySpills aggregates data many times larger than the tasks'
// memory budget, half of it under one key and the rest under 1.5 million
// keys: the aggregation spills to disk, the heap stays within the process's
// memory limit, far below the data's size, and the result is right.
func TestSkewedKeySpills(t *testing.T) {
	const records = 3_000_000 // ~300 MB of records; 1.5 million keys
	// The process's memory limit, as GOMEMLIMIT of an executor of 64 MiB.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(64 << 20))
	before := dataflow.Spills()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	runJob(t, "local[2]", func(ctx *Context) error {
		data := FlatMap(Range(ctx, 0, records, 1, 4), testSkew)
		agg := AggregateByKey(data, [2]int64{}, testCountLen, testAddPairs, 2)
		keys, err := agg.Count()
		if err != nil {
			return err
		}
		if keys != records/2+1 {
			t.Errorf("%d keys, want %d", keys, records/2+1)
		}
		hot, err := agg.Filter(testIsHot).Collect()
		if err != nil {
			return err
		}
		if want := []KV[int64, [2]int64]{{Key: -1, Value: [2]int64{records / 2, records / 2 * 90}}}; !slices.Equal(hot, want) {
			t.Errorf("hot key = %v, want %v", hot, want)
		}
		return nil
	}, "spark.driver.memory=40m")
	close(stop)
	<-sampled
	if spills := dataflow.Spills() - before; spills == 0 {
		t.Error("the aggregation never spilled")
	}
	if p := peak.Load(); p > 96<<20 {
		t.Errorf("peak heap %d MiB, want it bounded (64 MiB limit) far below the data's ~300 MB", p>>20)
	}
	t.Logf("peak heap %d MiB", peak.Load()>>20)
}

// Map outputs damaged on disk after they were written are caught by their
// checksums when read: the fetch fails, the map stage runs again, and the
// job's answer is right, instead of reduce tasks failing on bad records.
func TestCorruptShuffleFilesRecomputed(t *testing.T) {
	lines := generatedLines(3000)
	want := referenceWordCount(lines)
	dir := localDir(t)
	runJob(t, "local-cluster[2,1,256]", func(ctx *Context) error {
		counts := ReduceByKey(FlatMap(Parallelize(ctx, lines, 4), testWords), testSum, 3)
		if _, err := counts.Count(); err != nil {
			return err
		}
		damaged := 0
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".data") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil || len(b) == 0 {
				return err
			}
			b[len(b)/2] ^= 0x01
			damaged++
			return os.WriteFile(path, b, 0o600)
		})
		if err != nil || damaged == 0 {
			t.Fatalf("damaged %d map outputs under %s: %v", damaged, dir, err)
		}
		// The second action reads the same map outputs.
		got, err := counts.Collect()
		if err != nil {
			return err
		}
		if diff := gocmp.Diff(want, countsMap(t, got)); diff != "" {
			t.Errorf("counts after recomputing damaged map outputs (-want +got):\n%s", diff)
		}
		return nil
	}, "spark.local.dir="+dir)
}

// Repartition of records that come from a shuffle is indeterminate: its
// fetches complete in any order, so a recomputed map output would spread
// other records than the lost one did. An executor killed while the
// repartitioned data is read, after the stage's other partitions were
// computed from the data it held, must still leave every count exactly once.
func TestExecutorKilledAfterRepartitionOfShuffle(t *testing.T) {
	wordCountLosingAnExecutor(t, func(counts *Dataset[KV[string, int]]) ([]KV[string, int], error) {
		return MapPartitions(counts.Repartition(5), testKillLast).Collect()
	})
}

var (
	testPadded  = RegisterMap("test.padded", func(n int64) KV[int64, string] { return KV[int64, string]{Key: n % 4, Value: fmt.Sprintf("%0100d", n)} })
	testCollect = RegisterFold("test.collect", func(acc []string, v string) []string { return append(acc, v) })
	testConcat  = RegisterReduce("test.concat", func(a, b []string) []string { return append(a, b...) })
	testListLen = RegisterMap("test.listLen", func(kv KV[int64, []string]) KV[int64, int] { return KV[int64, int]{Key: kv.Key, Value: len(kv.Value)} })
)

// Accumulators that grow (a list per key) count against the task's memory:
// four keys holding 30 MB of values spill under a 40 MiB driver, and the
// lists come out whole.
func TestGrowingAccumulatorsSpill(t *testing.T) {
	const records = 300_000
	before := dataflow.Spills()
	runJob(t, "local[2]", func(ctx *Context) error {
		lists := AggregateByKey(Map(Range(ctx, 0, records, 1, 4), testPadded), []string(nil), testCollect, testConcat, 2)
		got, err := Map(lists, testListLen).Collect()
		if err != nil {
			return err
		}
		slices.SortFunc(got, func(a, b KV[int64, int]) int { return cmp.Compare(a.Key, b.Key) })
		want := []KV[int64, int]{{Key: 0, Value: records / 4}, {Key: 1, Value: records / 4}, {Key: 2, Value: records / 4}, {Key: 3, Value: records / 4}}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("values per key (-want +got):\n%s", diff)
		}
		return nil
	}, "spark.driver.memory=40m")
	if dataflow.Spills() == before {
		t.Error("four keys with 30 MB of values never spilled under a 40 MiB driver")
	}
}

// countsMap is a word count's result as a map; a word that appears twice
// is an error.
func countsMap(t *testing.T, counts []KV[string, int]) map[string]int {
	t.Helper()
	got := make(map[string]int, len(counts))
	for _, kv := range counts {
		if _, dup := got[kv.Key]; dup {
			t.Errorf("key %q appears twice", kv.Key)
		}
		got[kv.Key] = kv.Value
	}
	return got
}
