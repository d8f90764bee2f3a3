package eventlog

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// sample is an application's events: a start with its configuration, n
// tasks of one stage, and the end.
func sample(n int) []events.Event {
	conf := map[string]string{"spark.app.name": "wc", "spark.executor.instances": "4"}
	evs := []events.Event{
		&events.AppStart{Header: events.Header{Time: t0}, AppID: "drover-1", Name: "wc", Master: "local-cluster[2,1,256]", Conf: conf},
		&events.ExecutorAdded{Header: events.Header{Time: t0}, Executor: 1, Address: "127.0.0.1:7001", Cores: 2},
		&events.JobStart{Header: events.Header{Time: t0}, JobID: 1, Name: "count"},
		&events.StageSubmitted{Header: events.Header{Time: t0}, JobID: 1, StageID: 0, Name: "count", NumTasks: n},
	}
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		evs = append(evs,
			&events.TaskStart{Header: events.Header{Time: at}, TaskID: int64(i), Partition: i, Executor: executorid.ID(1 + i%2)},
			&events.TaskEnd{Header: events.Header{Time: at.Add(time.Millisecond)}, TaskID: int64(i), Partition: i,
				Executor: executorid.ID(1 + i%2), State: events.TaskSuccess, Duration: time.Millisecond,
				Metrics: events.TaskMetrics{ShuffleWriteBytes: int64(100 + i), ShuffleWriteRecords: 10}})
	}
	return append(evs,
		&events.StageCompleted{Header: events.Header{Time: t0.Add(time.Second)}, StageID: 0},
		&events.JobEnd{Header: events.Header{Time: t0.Add(time.Second)}, JobID: 1},
		&events.AppEnd{Header: events.Header{Time: t0.Add(2 * time.Second)}})
}

func write(t *testing.T, opts Options, evs []events.Event) *Writer {
	t.Helper()
	w, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		w.Handle(e)
	}
	return w
}

func replayAll(t *testing.T, l Log) ([]events.Event, Stats) {
	t.Helper()
	var got []events.Event
	st, err := Replay(context.Background(), l, func(e events.Event) { got = append(got, e) })
	if err != nil {
		t.Fatalf("Replay(%s): %v", l.Path, err)
	}
	return got, st
}

// files lists dir's tree as slash-separated relative paths.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	evs := sample(300)
	for _, tc := range []struct {
		name  string
		opts  Options
		files []string
	}{
		{"plain", Options{}, []string{"drover-1"}},
		{"zstd", Options{Codec: "zstd"}, []string{"drover-1.zstd"}},
		{"snappy", Options{Codec: "snappy"}, []string{"drover-1.snappy"}},
		{"gzip", Options{Codec: "gzip"}, []string{"drover-1.gzip"}},
		{"rolling", Options{Rolling: true, MaxFileSize: 1 << 30},
			[]string{"eventlog_v2_drover-1/appstatus_drover-1", "eventlog_v2_drover-1/events_1_drover-1"}},
		{"rolling zstd", Options{Rolling: true, MaxFileSize: 1 << 30, Codec: "zstd"},
			[]string{"eventlog_v2_drover-1/appstatus_drover-1", "eventlog_v2_drover-1/events_1_drover-1.zstd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The directory is created when missing, as in a new pod.
			dir := filepath.Join(t.TempDir(), "spark-events")
			opts := tc.opts
			opts.Dir, opts.AppID = "file://"+dir, "drover-1"
			w := write(t, opts, evs)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.files, files(t, dir)); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			logs, err := List(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(logs) != 1 || logs[0].AppID != "drover-1" || logs[0].InProgress || logs[0].Rolling != opts.Rolling {
				t.Fatalf("List = %+v, want one finished log of drover-1", logs)
			}
			got, st := replayAll(t, logs[0])
			if diff := cmp.Diff(evs, got); diff != "" {
				t.Errorf("replayed events (-want +got):\n%s", diff)
			}
			if st != (Stats{Events: len(evs)}) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// Tasks that start and end successfully between two flushes take a row
// each of a line per stage attempt, any other that does one line, and the
// reader gives back both events of each. The log's order may change among task
// events, never across another event, a flush or a task's start and end.
func TestTaskStartAndEndShareALine(t *testing.T) {
	at := func(ms int) events.Header { return events.Header{Time: t0.Add(time.Duration(ms) * time.Millisecond)} }
	start := func(id int64, ms int) *events.TaskStart {
		return &events.TaskStart{Header: at(ms), TaskID: id, StageID: 2, StageAttempt: 1, Partition: int(id), Attempt: int(id % 2), Executor: 3}
	}
	end := func(id int64, ms int) *events.TaskEnd {
		return &events.TaskEnd{Header: at(ms), TaskID: id, StageID: 2, StageAttempt: 1, Partition: int(id), Attempt: int(id % 2), Executor: 3,
			State: events.TaskSuccess, Duration: time.Millisecond}
	}
	endAt := func(id int64, at time.Time) *events.TaskEnd {
		e := end(id, 0)
		e.Time = at
		return e
	}
	flush := events.Event(nil) // a Flush between two events
	var many []events.Event
	for i := range int64(2 * maxHeldStarts) { // more held than the bound, none ended
		many = append(many, start(100+i, 0))
	}
	for i := range int64(2 * maxHeldStarts) {
		many = append(many, end(100+i, 1))
	}
	var full []events.Event // rows for two lines
	for i := range int64(2 * events.MaxTaskRows) {
		full = append(full, start(100+i, 0))
	}
	for i := range int64(2 * events.MaxTaskRows) {
		full = append(full, end(100+i, 1))
	}
	for _, tc := range []struct {
		name  string
		evs   []events.Event
		lines int
	}{
		{"rows", []events.Event{start(1, 0), start(2, 1), end(2, 2), end(1, 3)}, 1},
		{"rows of two stage attempts", []events.Event{start(1, 0), start(2, 1), end(2, 2), end(1, 3), &events.TaskStart{Header: at(4), TaskID: 3,
			StageID: 2, StageAttempt: 2, Partition: 3, Attempt: 1, Executor: 3}, &events.TaskEnd{Header: at(5), TaskID: 3, StageID: 2, StageAttempt: 2, Partition: 3, Attempt: 1, Executor: 3,
			State: events.TaskSuccess}}, 2},
		{"a line of rows is bounded", full, 2},
		{"a task's end not in UTC", []events.Event{start(1, 0), endAt(1, t0.In(time.FixedZone("", 3600)))}, 1},
		{"a task's end in nanoseconds", []events.Event{start(1, 0), endAt(1, t0.Add(time.Nanosecond))}, 1},
		{"flush between", []events.Event{start(1, 0), flush, end(1, 1)}, 2},
		{"other event between", []events.Event{start(1, 0), &events.ExecutorAdded{Header: at(1), Executor: 4}, end(1, 2)}, 3},
		{"out of order", []events.Event{start(5, 0), start(4, 1), end(4, 2), end(5, 3)}, 4},
		{"failed and retried", []events.Event{start(1, 0), &events.TaskEnd{Header: at(1), TaskID: 1, StageID: 2, StageAttempt: 1, Partition: 1,
			Attempt: 1, Executor: 3, State: events.TaskFailed, Reason: "boom"}, start(2, 2), end(2, 3)}, 2},
		{"beyond the bound", many, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Start(context.Background(), Options{Dir: dir, AppID: "drover-1"})
			if err != nil {
				t.Fatal(err)
			}
			var want []events.Event
			for _, e := range tc.evs {
				if e == nil {
					w.Flush()
					continue
				}
				w.Handle(e)
				want = append(want, e)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "drover-1"))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(data), "\n"); tc.lines > 0 && n != tc.lines {
				t.Errorf("%d lines, want %d:\n%s", n, tc.lines, data)
			}
			logs, err := List(context.Background(), dir, nil)
			if err != nil || len(logs) != 1 {
				t.Fatalf("List = %v, %v", logs, err)
			}
			got, st := replayAll(t, logs[0])
			if st.Events != len(want) {
				t.Errorf("stats %+v, want %d events", st, len(want))
			}
			checkSameHistory(t, tc.evs, got)
		})
	}
}

// checkSameHistory checks that got has the events of want (nil: a flush),
// each task's start before its end, and that whatever came before a flush
// or an event other than a task's still does.
func checkSameHistory(t *testing.T, want, got []events.Event) {
	t.Helper()
	key := func(e events.Event) string { return fmt.Sprintf("%T %+v", e, e) }
	pos := map[string]int{}
	for i, e := range got {
		pos[key(e)] = i
	}
	if len(pos) != len(got) {
		t.Fatalf("events read back twice:\n%s", cmp.Diff(want, got))
	}
	var before []int // positions in got of the events before the last barrier
	barrier := -1
	for _, e := range want {
		if e == nil {
			for _, p := range before {
				barrier = max(barrier, p)
			}
			continue
		}
		p, ok := pos[key(e)]
		if !ok {
			t.Fatalf("%s was not read back; got:\n%s", key(e), cmp.Diff(want, got))
		}
		if p < barrier {
			t.Errorf("%s was read back before an event or flush that preceded it", key(e))
		}
		switch e := e.(type) {
		case *events.TaskStart:
		case *events.TaskEnd:
			for q, g := range got {
				if st, ok := g.(*events.TaskStart); ok && st.TaskID == e.TaskID && q > p {
					t.Errorf("task %d ends before it starts", e.TaskID)
				}
			}
		default:
			for _, b := range before {
				if b > p {
					t.Errorf("%s was read back after an event that followed it", key(e))
				}
			}
			barrier = max(barrier, p)
		}
		before = append(before, p)
	}
	if len(got) != len(pos) || len(got) != len(before) {
		t.Errorf("%d events read back, want %d", len(got), len(before))
	}
}

// A rolled log cuts its files at the maximum size of events, before
// compression, and reads back whole.
func TestRollingCutsFiles(t *testing.T) {
	evs := sample(2000)
	for _, codec := range []string{"", "zstd", "snappy"} {
		t.Run("codec="+codec, func(t *testing.T) {
			dir := t.TempDir()
			const maxSize = 8 << 10
			w := write(t, Options{Dir: dir, AppID: "drover-1", Codec: codec, Rolling: true, MaxFileSize: maxSize}, evs)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			logs, err := List(context.Background(), dir, nil)
			if err != nil || len(logs) != 1 {
				t.Fatalf("List = %v, %v", logs, err)
			}
			l := logs[0]
			if len(l.files) < 5 {
				t.Fatalf("%d files, want the log cut into many of %d bytes", len(l.files), maxSize)
			}
			for i, f := range l.files {
				if want := "eventlog_v2_drover-1/" + eventsName("drover-1", i+1, codec); f != want {
					t.Errorf("file %d is %s, want %s", i, f, want)
				}
				if codec == "" {
					if fi, _ := os.Stat(filepath.Join(dir, f)); fi.Size() > maxSize {
						t.Errorf("%s has %d bytes, more than %d", f, fi.Size(), maxSize)
					}
				}
			}
			got, _ := replayAll(t, l)
			if diff := cmp.Diff(evs, got); diff != "" {
				t.Errorf("replayed events (-want +got):\n%s", diff)
			}
		})
	}
}

// While the application runs, its log has its in-progress name and shows
// every event written out so far; the flush comes from the clock.
func TestInProgressLogIsReadable(t *testing.T) {
	evs := sample(20)
	for _, rolling := range []bool{false, true} {
		t.Run(fmt.Sprint("rolling=", rolling), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				clk := clocktesting.NewFakeClock(t0)
				w := write(t, Options{Dir: dir, AppID: "drover-1", Codec: "zstd", Rolling: rolling, MaxFileSize: 1 << 20, Clock: clk}, evs[:10])
				defer w.Close()
				want := []string{"drover-1.zstd.inprogress"}
				if rolling {
					want = []string{"eventlog_v2_drover-1/appstatus_drover-1.inprogress", "eventlog_v2_drover-1/events_1_drover-1.zstd"}
				}
				if diff := cmp.Diff(want, files(t, dir)); diff != "" {
					t.Errorf("files (-want +got):\n%s", diff)
				}
				// The writer waits for its flush tick; once it took it, it
				// waits again.
				synctest.Wait()
				if !clk.HasWaiters() {
					t.Fatal("the writer does not wait for its flush tick")
				}
				clk.Step(DefaultFlushInterval)
				synctest.Wait()
				logs, err := List(context.Background(), dir, nil)
				if err != nil || len(logs) != 1 || !logs[0].InProgress {
					t.Fatalf("List = %+v, %v; want one log in progress", logs, err)
				}
				got, _ := replayAll(t, logs[0])
				if diff := cmp.Diff(evs[:10], got); diff != "" {
					t.Errorf("events of the log in progress (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// A driver killed while writing leaves its last event cut short: the
// reader drops it and reports the log truncated.
func TestTruncatedLastLine(t *testing.T) {
	evs := sample(50)
	for _, codec := range []string{"", "zstd", "snappy", "gzip"} {
		t.Run("codec="+codec, func(t *testing.T) {
			dir := t.TempDir()
			// Two flushes: a compressed stream loses the whole block the
			// cut falls in, which is what was written since the last.
			w := write(t, Options{Dir: dir, AppID: "drover-1", Codec: codec}, evs[:25])
			w.Flush()
			for _, e := range evs[25:] {
				w.Handle(e)
			}
			w.Flush()
			path := filepath.Join(dir, withCodec("drover-1", codec)+inProgress)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(strings.TrimSuffix(path, inProgress)); err != nil {
				t.Fatal(err)
			}
			// What a killed driver leaves: its file in progress, cut
			// anywhere in its last part.
			if err := os.WriteFile(path, data[:len(data)-7], 0o600); err != nil {
				t.Fatal(err)
			}
			logs, err := List(context.Background(), dir, nil)
			if err != nil || len(logs) != 1 {
				t.Fatalf("List = %v, %v", logs, err)
			}
			got, st := replayAll(t, logs[0])
			if !st.Truncated || st.Events != len(got) {
				t.Errorf("stats %+v after %d events, want truncated", st, len(got))
			}
			if len(got) < 25 || len(got) >= len(evs) {
				t.Fatalf("%d events read back, want those of the first flush (25) at least, not all %d", len(got), len(evs))
			}
			if diff := cmp.Diff(evs[:len(got)], got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnknownEventsAreSkippedAndBadLinesFail(t *testing.T) {
	dir := t.TempDir()
	evs := sample(2)
	var lines []string
	for i, e := range evs {
		b, err := events.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
		if i == 2 {
			lines = append(lines, `{"Event":"FromTheFuture","Time":"2027-01-01T00:00:00Z","Thing":1}`, "")
		}
	}
	path := filepath.Join(dir, "drover-1")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, err := List(context.Background(), dir, nil)
	if err != nil || len(logs) != 1 {
		t.Fatalf("List = %v, %v", logs, err)
	}
	l := logs[0]
	got, st := replayAll(t, l)
	if diff := cmp.Diff(evs, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if st != (Stats{Events: len(evs), Unknown: 1}) {
		t.Errorf("stats %+v, want one unknown event", st)
	}

	// A damaged line that is not the last is an error, with its number.
	lines[1] = `{"Event":"ExecutorAdded","Executor":`
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(context.Background(), l, func(events.Event) {}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Replay of a damaged log: %v, want an error naming line 2", err)
	}
}

func TestExistingLog(t *testing.T) {
	for _, rolling := range []bool{false, true} {
		t.Run(fmt.Sprint("rolling=", rolling), func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{Dir: dir, AppID: "drover-1", Rolling: rolling, MaxFileSize: 1 << 20}
			w := write(t, opts, sample(1))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := Start(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "spark.eventLog.overwrite") {
				t.Fatalf("second log of the same application: %v, want an error naming spark.eventLog.overwrite", err)
			}
			opts.Overwrite = true
			evs := sample(3)
			w = write(t, opts, evs)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			logs, err := List(context.Background(), dir, nil)
			if err != nil || len(logs) != 1 {
				t.Fatalf("List = %v, %v; want the one log", logs, err)
			}
			got, _ := replayAll(t, logs[0])
			if diff := cmp.Diff(evs, got); diff != "" {
				t.Errorf("the replaced log (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{AppID: "a", Codec: "lz4"}, `codec "lz4" is not supported: use zstd, snappy, gzip`},
		{Options{AppID: "a", Dir: "hdfs://nn/logs"}, "unsupported scheme hdfs://"},
		{Options{AppID: "a", Dir: "s3://bucket/logs"}, "no object-store client"},
		{Options{AppID: "a", Rolling: true}, "maximum file size"},
		{Options{}, "no application id"},
	} {
		if tc.opts.Dir == "" {
			tc.opts.Dir = t.TempDir()
		}
		if _, err := Start(context.Background(), tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
		}
	}
}

// countingHandler counts error records.
type countingHandler struct {
	slog.Handler
	errors *atomic.Int64
}

func (countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.errors.Add(1)
	}
	return nil
}

// A log that cannot be written is reported once; the events given to it
// after are dropped quietly, and nothing panics.
func TestWriteErrorIsLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	var errs atomic.Int64
	log := slog.New(countingHandler{slog.DiscardHandler, &errs})
	w := write(t, Options{Dir: dir, AppID: "drover-1", Rolling: true, MaxFileSize: 512, Logger: log}, sample(5))
	w.Flush() // the parts rolled so far are written in the background
	// The log's directory disappears: the next file cannot be created.
	if err := os.RemoveAll(filepath.Join(dir, "eventlog_v2_drover-1")); err != nil {
		t.Fatal(err)
	}
	for _, e := range sample(50) {
		w.Handle(e)
	}
	w.Flush()
	if err := w.Close(); err == nil {
		t.Error("Close returned no error")
	}
	if n := errs.Load(); n != 1 {
		t.Errorf("%d errors logged, want 1", n)
	}
}

func TestNames(t *testing.T) {
	if got := sanitize("Spark App:1/x.y"); got != "spark-app-1-x_y" {
		t.Errorf("sanitize = %q", got)
	}
	for _, tc := range []struct {
		name, app, codec string
		running          bool
	}{
		{"drover-1", "drover-1", "", false},
		{"drover-1.zstd.inprogress", "drover-1", "zstd", true},
		{"app-2.lz4", "app-2", "lz4", false},
	} {
		app, codec, running := parseSingle(tc.name)
		if app != tc.app || codec != tc.codec || running != tc.running {
			t.Errorf("parseSingle(%q) = %q %q %v", tc.name, app, codec, running)
		}
	}
	index, codec, ok := parseEvents("events_12_drover-1.zstd")
	if index != 12 || codec != "zstd" || !ok {
		t.Errorf("parseEvents = %d %q %v", index, codec, ok)
	}
	if _, _, ok := parseEvents("appstatus_drover-1"); ok {
		t.Error("parseEvents took a status marker for an events file")
	}
	if !slices.Contains(Codecs, "zstd") {
		t.Error("zstd is not a codec")
	}
}

// BenchmarkWriteTask is the event log's cost per task, its start and end
// (with each codec), as a driver's consumer pays it, for a stage
// of no-op tasks as the scheduler runs them: launched eight at a time on
// one executor, alike but for their executor's measured microsecond. The
// events are the scheduler's to allocate, so one pair is reused.
func BenchmarkWriteTask(b *testing.B) {
	for _, codec := range append([]string{""}, Codecs...) {
		b.Run("codec="+codec, func(b *testing.B) { benchmarkWriteTask(b, codec) })
	}
}

func benchmarkWriteTask(b *testing.B, codec string) {
	w, err := Start(context.Background(), Options{Dir: b.TempDir(), AppID: "drover-1", Codec: codec})
	if err != nil {
		b.Fatal(err)
	}
	t := time.Now().Truncate(time.Microsecond).UTC()
	var start events.TaskStart
	var end events.TaskEnd
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if i%8 == 0 {
			t = t.Add(20 * time.Microsecond)
		}
		executor := executorid.ID(1 + i/8%4)
		start = events.TaskStart{Header: events.Header{Time: t}, TaskID: int64(i), StageID: 1, Partition: i, Executor: executor}
		w.Handle(&start)
		end = events.TaskEnd{Header: events.Header{Time: t.Add(900 * time.Microsecond)}, TaskID: int64(i), StageID: 1, Partition: i,
			Executor: executor, State: events.TaskSuccess, Duration: time.Duration(i*7919%3/2) * time.Microsecond,
			Metrics: events.TaskMetrics{ResultBytes: 1}}
		w.Handle(&end)
		if i%300_000 == 0 { // a flush a second at 300,000 tasks a second
			w.Flush()
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// The scheduler sends a task that ends soon after its launch as one
// TaskEnd with its Launch time, never a TaskStart: the log makes it a row
// as it does a start and end handed in apart, and gives both back.
func TestTaskEndWithItsStart(t *testing.T) {
	want, src := sample(300), sample(300)
	var in []events.Event
	for i, e := range src {
		switch e := e.(type) {
		case *events.TaskStart:
			if e.TaskID%2 == 0 {
				end := src[i+1].(*events.TaskEnd)
				end.Launch = e.Time
				in = append(in, end)
				continue
			}
		case *events.TaskEnd:
			if !e.Launch.IsZero() {
				continue // sent with its start above
			}
		}
		in = append(in, e)
	}
	dir := t.TempDir()
	w := write(t, Options{Dir: dir, AppID: "drover-1"}, in)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "drover-1"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(raw, []byte(`{"Event":"TaskEnd"`)); n != 0 {
		t.Errorf("%d TaskEnd lines, want every task in rows", n)
	}
	logs, err := List(context.Background(), dir, nil)
	if err != nil || len(logs) != 1 {
		t.Fatalf("List = %v, %v", logs, err)
	}
	got, _ := replayAll(t, logs[0])
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replayed events (-want +got):\n%s", diff)
	}
}
