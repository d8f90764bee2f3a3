package drover

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/drover-project/drover/internal/backend/coarse"
)

var testLongWord = RegisterFilter("test.longWord", func(kv KV[string, int]) bool { return len(kv.Key) > 2 })

// shuffleFiles counts the map output files under dir.
func shuffleFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a directory removed while walking
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "shuffle_") {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// localDir is a spark.local.dir for t. Not t.TempDir: a subtest's name
// may hold a comma, which separates the directories of spark.local.dir.
func localDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "drover-cleaner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// pollUntil calls ok every interval until it holds or timeout passed, and
// reports whether it held: for what other processes (executors, the API
// server, a browser) or the runtime (finalizers) do, which only real time
// advances.
func pollUntil(timeout, interval time.Duration, ok func() bool) bool {
	return wait.PollUntilContextTimeout(context.Background(), interval, timeout, true,
		func(context.Context) (bool, error) { return ok(), nil }) == nil
}

// collectUntil runs the garbage collector until cond holds or d passed,
// and reports whether it held.
func collectUntil(d time.Duration, cond func() bool) bool {
	return pollUntil(d, 20*time.Millisecond, func() bool {
		runtime.GC()
		return cond()
	})
}

// A shuffle's files stay while a dataset that reads it, directly or through
// its descendants, is reachable, and are deleted on the executors once none
// is (spark.cleaner.referenceTracking, Spark's ContextCleaner).
func TestDroppedDatasetsShuffleFilesRemoved(t *testing.T) {
	lines := generatedLines(2000)
	for _, master := range []string{"local[2]", "local-cluster[2,1,256]"} {
		t.Run(master, func(t *testing.T) {
			dir := localDir(t)
			runJob(t, master, func(ctx *Context) error {
				counts := ReduceByKey(FlatMap(Parallelize(ctx, lines, 4), testWords), testSum, 3)
				if _, err := counts.Count(); err != nil {
					return err
				}
				written := shuffleFiles(t, dir)
				if written == 0 {
					t.Fatalf("no shuffle files under %s after a shuffle", dir)
				}
				// A descendant keeps the shuffle it is computed from.
				long := counts.Filter(testLongWord)
				runtime.GC()
				runtime.GC()
				// Real time: the finalizers and the cleaner run on the
				// runtime's goroutines, the deletes in executor processes.
				time.Sleep(100 * time.Millisecond)
				if n := shuffleFiles(t, dir); n != written {
					t.Errorf("%d shuffle files while a descendant is reachable, want %d", n, written)
				}
				if _, err := long.Count(); err != nil {
					return err
				}
				if n := shuffleFiles(t, dir); n != written {
					t.Errorf("the descendant's job wrote the shuffle again: %d files, want %d", n, written)
				}
				// Nothing reads it any more.
				if !collectUntil(10*time.Second, func() bool { return shuffleFiles(t, dir) == 0 }) {
					t.Errorf("%d shuffle files left 10 s after the last dataset reading them became unreachable", shuffleFiles(t, dir))
				}
				return nil
			}, "spark.local.dir="+dir)
		})
	}
}

func TestReferenceTrackingOff(t *testing.T) {
	dir := localDir(t)
	runJob(t, "local[2]", func(ctx *Context) error {
		counts := ReduceByKey(FlatMap(Parallelize(ctx, generatedLines(100), 2), testWords), testSum, 2)
		if _, err := counts.Count(); err != nil {
			return err
		}
		written := shuffleFiles(t, dir)
		if collectUntil(time.Second, func() bool { return shuffleFiles(t, dir) < written }) {
			t.Errorf("shuffle files removed with spark.cleaner.referenceTracking=false")
		}
		return nil
	}, "spark.local.dir="+dir, "spark.cleaner.referenceTracking=false")
}

// With dynamic allocation, an idle executor that holds shuffle data stays
// while the program holds a dataset that reads it, and goes once it drops
// the dataset: the cleaner deletes the data and the executor is idle.
func TestDynamicAllocationReleasesExecutorsOfDroppedShuffles(t *testing.T) {
	runJob(t, "local-cluster[2,1,256]", func(ctx *Context) error {
		lister := ctx.backend.(interface{ Executors() []coarse.ExecutorInfo })
		counts := ReduceByKey(FlatMap(Parallelize(ctx, generatedLines(500), 4), testWords), testSum, 2)
		if _, err := counts.Count(); err != nil {
			return err
		}
		// Real time: 2.5 × the idle timeout of executor processes.
		time.Sleep(2500 * time.Millisecond)
		if n := len(lister.Executors()); n == 0 {
			t.Fatal("the executors holding the shuffle of a reachable dataset were removed")
		}
		runtime.KeepAlive(counts)
		if !collectUntil(20*time.Second, func() bool { return len(lister.Executors()) == 0 }) {
			t.Errorf("%d executors remain 20 s after the only dataset reading their shuffle data was dropped",
				len(lister.Executors()))
		}
		return nil
	}, dynamicAllocationConf...)
}
