package keptlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

const logDir = "drover-0123456789abcdef/driver-a1/"

// A chunk is shipped every interval, holding what was written in it; an
// idle interval ships nothing. Objects get a file per chunk, a local
// directory one file the chunks are appended to.
func TestKeptLogsCadence(t *testing.T) {
	for _, tc := range []struct {
		appends bool
		want    [][]string // the files after each interval
	}{
		{appends: false, want: [][]string{
			nil,
			{logDir + "0000000000000000.log.gz"},
			{logDir + "0000000000000000.log.gz", logDir + "0000000000000002.log.gz"},
			{logDir + "0000000000000000.log.gz", logDir + "0000000000000002.log.gz"},
		}},
		{appends: true, want: [][]string{
			nil,
			{logDir + "0000000000000000.log.gz"},
			{logDir + "0000000000000000.log.gz"},
			{logDir + "0000000000000000.log.gz"},
		}},
	} {
		t.Run(fmt.Sprintf("appends=%v", tc.appends), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := newMemSink(tc.appends)
				b := newBubble(t, Options{Sink: sink})
				logFiles := func() []string {
					var out []string
					for _, n := range sink.names() {
						if strings.HasPrefix(n, logDir) {
							out = append(out, n)
						}
					}
					return out
				}
				b.write("a\n")
				b.step(4 * time.Second)
				got := [][]string{logFiles()}
				b.step(time.Second)
				got = append(got, logFiles())
				if diff := cmp.Diff("a\n", readLog(t, sink, driver1)); diff != "" {
					t.Errorf("after one interval (-want +got):\n%s", diff)
				}
				b.write("b\n", "c\n")
				b.step(5 * time.Second)
				got = append(got, logFiles())
				b.step(5 * time.Second)
				got = append(got, logFiles())
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("files after each interval (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff("a\nb\nc\n", readLog(t, sink, driver1)); diff != "" {
					t.Errorf("log (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(Stats{ChunksShipped: 2, BytesShipped: 6}, b.w.Stats()); diff != "" {
					t.Errorf("stats (-want +got):\n%s", diff)
				}
				b.close()
			})
		})
	}
}

// Flush ships at once, a partial line too; Close ships the rest and the
// end mark, drops later writes, and may be called again. A store that does
// not come back makes Close give up when its context ends, saying so.
func TestKeptLogsFlushClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := newMemSink(false)
		b := newBubble(t, Options{Sink: sink})
		b.write("partial")
		if err := b.w.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := readLog(t, sink, driver1); got != "partial" {
			t.Errorf("after Flush: %q", got)
		}
		b.write(" line\n")
		b.close()
		b.write("after close\n")
		if err := b.w.Close(context.Background()); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if got := readLog(t, sink, driver1); got != "partial line\n" {
			t.Errorf("after Close: %q", got)
		}
		if diff := cmp.Diff(Stats{ChunksShipped: 2, BytesShipped: 13, BytesDropped: 12}, b.w.Stats()); diff != "" {
			t.Errorf("stats (-want +got):\n%s", diff)
		}
		// The end mark ends a reader that follows the log.
		r, err := Open(context.Background(), sink, driver1, ReadOptions{Tail: AllLines, Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(r); err != nil || string(got) != "partial line\n" {
			t.Errorf("following a closed log: %q, %v", got, err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		sink := newMemSink(false)
		b := newBubble(t, Options{Sink: sink})
		sink.setDown(errors.New("connection refused"))
		b.write("lost\n")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := b.w.Close(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "5 bytes unsent") ||
			!strings.Contains(err.Error(), "connection refused") {
			t.Errorf("Close with the store down: %v", err)
		}
		if st := b.w.Stats(); st.ChunksDropped != 1 || st.BytesDropped != 5 || st.ShipFailures == 0 {
			t.Errorf("stats: %+v", st)
		}
	})
}

// Chunks are read back in the order written, however many there are and
// however many goroutines write: each Write's bytes stay together.
func TestKeptLogsOrdering(t *testing.T) {
	for _, appends := range []bool{false, true} {
		t.Run(fmt.Sprintf("appends=%v", appends), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := newMemSink(appends)
				b := newBubble(t, Options{Sink: sink, MaxChunk: 100, MaxMemory: 1 << 20, SegmentBytes: 1000})
				const writers, each = 4, 200
				var wg sync.WaitGroup
				for g := range writers {
					wg.Go(func() {
						for _, l := range lines(fmt.Sprint("g", g), 0, each, 20) {
							if _, err := b.w.Write([]byte(l)); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				b.close()
				got := strings.SplitAfter(readLog(t, sink, driver1), "\n")
				got = got[:len(got)-1]
				if len(got) != writers*each {
					t.Fatalf("%d lines read back, want %d", len(got), writers*each)
				}
				for g := range writers {
					var mine []string
					for _, l := range got {
						if strings.HasPrefix(l, fmt.Sprint("g", g, "-")) {
							mine = append(mine, l)
						}
					}
					if diff := cmp.Diff(lines(fmt.Sprint("g", g), 0, each, 20), mine); diff != "" {
						t.Errorf("writer %d's lines (-want +got):\n%s", g, diff)
					}
				}
				names := sink.names()
				if !slices.IsSorted(names) || len(names) < 3 {
					t.Errorf("files: %v", names)
				}
			})
		})
	}
}

// A store that is down costs at most MaxMemory: past it the oldest unsent
// chunks are dropped, counted and warned of; once the store is back the
// rest is shipped in order, and the reader marks the gap. With memory
// enough, nothing is lost.
func TestKeptLogsOutage(t *testing.T) {
	const width = 32 // 8 lines a chunk of 256 bytes
	before := lines("before", 0, 10, width)
	during := lines("during", 0, 96, width)
	after := lines("after", 0, 4, width)
	join := func(parts ...[]string) string {
		var s strings.Builder
		for _, p := range parts {
			s.WriteString(strings.Join(p, ""))
		}
		return s.String()
	}
	for _, tc := range []struct {
		name      string
		maxMemory int
		want      string
		wantStats Stats
	}{
		{name: "memory enough", maxMemory: 1 << 20, want: join(before, during, after),
			wantStats: Stats{ChunksShipped: 15, BytesShipped: 110 * width}},
		{
			// The chunk in flight when the store went down is kept, the
			// 3 newest fit beside it, the 8 between are dropped.
			name: "memory full", maxMemory: 1024,
			want: join(before, during[:8]) + "[drover: 2048 bytes of this log were dropped here: the store was down or slow " +
				"and the process's memory for unsent output was full]\n" + join(during[72:], after),
			wantStats: Stats{ChunksShipped: 7, BytesShipped: 46 * width, ChunksDropped: 8, BytesDropped: 64 * width},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := newMemSink(false)
				b := newBubble(t, Options{Sink: sink, MaxChunk: 256, MaxMemory: tc.maxMemory, MaxBackoff: 2 * time.Second})
				b.write(before...)
				b.step(5 * time.Second)
				sink.setDown(errors.New("connection refused"))
				b.write(during...)
				b.step(5 * time.Second)
				b.step(5 * time.Second)
				sink.setDown(nil)
				b.step(5 * time.Second)
				b.write(after...)
				b.close()
				if diff := cmp.Diff(tc.want, readLog(t, sink, driver1)); diff != "" {
					t.Errorf("log (-want +got):\n%s", diff)
				}
				st := b.w.Stats()
				if st.ShipFailures == 0 {
					t.Errorf("no failure counted")
				}
				st.ShipFailures = 0
				if diff := cmp.Diff(tc.wantStats, st); diff != "" {
					t.Errorf("stats (-want +got):\n%s", diff)
				}
				warned := b.log.String()
				if !strings.Contains(warned, "shipping failed") || !strings.Contains(warned, "shipping again") {
					t.Errorf("warnings: %s", warned)
				}
				if dropWarned := strings.Contains(warned, "chunksDropped=8"); dropWarned != (tc.wantStats.ChunksDropped > 0) {
					t.Errorf("warnings of drops: %s", warned)
				}
			})
		})
	}
}

// Past the cap the oldest files are deleted, the last bytes kept, and the
// reader says how much was cut. A local directory's files hold several
// chunks and are deleted whole.
func TestKeptLogsCap(t *testing.T) {
	for _, tc := range []struct {
		appends   bool
		wantCut   int
		wantFiles int
	}{
		{appends: false, wantCut: 2000, wantFiles: 10},
		// Files of 300 bytes (3 chunks, past SegmentBytes): 3 fit in 1000.
		{appends: true, wantCut: 2100, wantFiles: 3},
	} {
		t.Run(fmt.Sprintf("appends=%v", tc.appends), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := newMemSink(tc.appends)
				b := newBubble(t, Options{Sink: sink, MaxChunk: 100, MaxMemory: 1000, MaxBytes: 1000, SegmentBytes: 250})
				all := lines("line", 0, 150, 20) // 3000 bytes, 30 chunks
				b.write(all...)
				b.close()
				want := fmt.Sprintf("[drover: %d bytes of this log were cut to keep it under the cap]\n", tc.wantCut) +
					strings.Join(all, "")[tc.wantCut:]
				if diff := cmp.Diff(want, readLog(t, sink, driver1)); diff != "" {
					t.Errorf("log (-want +got):\n%s", diff)
				}
				var files int
				for _, n := range sink.names() {
					if strings.HasPrefix(n, logDir) {
						files++
					}
				}
				// The end mark is a file of its own on an object store.
				if !tc.appends {
					files--
				}
				if files != tc.wantFiles || b.w.Stats().BytesCut != int64(tc.wantCut) {
					t.Errorf("%d files kept, %d bytes cut; want %d, %d", files, b.w.Stats().BytesCut, tc.wantFiles, tc.wantCut)
				}
			})
		})
	}
}

// A process whose name was used before continues after what the first one
// left, rather than overwriting it; a file holding no whole chunk (its
// writer killed in its first write) is deleted first.
func TestKeptLogsContinue(t *testing.T) {
	for _, appends := range []bool{false, true} {
		t.Run(fmt.Sprintf("appends=%v", appends), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := newMemSink(appends)
				first := newBubble(t, Options{Sink: sink})
				first.write("one\n")
				first.close()
				torn, _ := encode(member{off: 4, data: []byte("torn\n")})
				sink.set(logDir+fileName(4), torn[:len(torn)/2])
				second := newBubble(t, Options{Sink: sink})
				second.write("two\n")
				second.close()
				if diff := cmp.Diff("one\ntwo\n", readLog(t, sink, driver1)); diff != "" {
					t.Errorf("log (-want +got):\n%s", diff)
				}
				if !strings.Contains(second.log.String(), "continuing after it") {
					t.Errorf("no warning: %s", second.log.String())
				}
			})
		})
	}
}

// Processes lists an application's processes in order, whatever else is
// in its directory.
func TestKeptLogsProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := newMemSink(false)
		procs := []Process{
			{AppID: driver1.AppID, Executor: 10, Attempt: 1},
			{AppID: driver1.AppID, Attempt: 2},
			{AppID: driver1.AppID, Executor: 2, Attempt: 2},
			{AppID: driver1.AppID, Executor: 2, Attempt: 1},
			driver1,
			{AppID: "other-app", Attempt: 1},
		}
		for _, p := range procs {
			b := newBubble(t, Options{Sink: sink, Process: p})
			b.write("hello from " + p.String() + "\n")
			b.close()
		}
		sink.set(driver1.AppID+"/processes/notes.txt", nil)
		sink.set(driver1.AppID+"/processes/executor-0-a1", nil)
		got, err := Processes(context.Background(), sink, driver1.AppID)
		if err != nil {
			t.Fatal(err)
		}
		want := []Process{driver1, {AppID: driver1.AppID, Attempt: 2}, {AppID: driver1.AppID, Executor: 2, Attempt: 1},
			{AppID: driver1.AppID, Executor: 2, Attempt: 2}, {AppID: driver1.AppID, Executor: 10, Attempt: 1}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Processes (-want +got):\n%s", diff)
		}
		if got := readLog(t, sink, want[4]); got != "hello from executor 10 (attempt 1) of application "+driver1.AppID+"\n" {
			t.Errorf("executor 10's log: %q", got)
		}
		if got, err := Processes(context.Background(), sink, "no-such-app"); err != nil || len(got) != 0 {
			t.Errorf("Processes of an unknown application: %v, %v", got, err)
		}
	})
}
