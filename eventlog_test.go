package drover

import (
	"bytes"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/events"
)

// readLog replays the one event log in dir.
func readLog(t *testing.T, dir string) (eventlog.Log, []events.Event) {
	t.Helper()
	logs, err := eventlog.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1 {
		t.Fatalf("%d event logs in %s, want 1: %+v", len(logs), dir, logs)
	}
	var got []events.Event
	st, err := eventlog.Replay(logs[0], func(e events.Event) { got = append(got, e) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Truncated || st.Unknown > 0 {
		t.Errorf("replay stats %+v, want a whole log of known events", st)
	}
	return logs[0], got
}

// count counts events by type name, and task ends by state.
func count(evs []events.Event) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		n[events.Name(e)]++
		if te, ok := e.(*events.TaskEnd); ok {
			n["TaskEnd "+te.State]++
		}
	}
	return n
}

// The event log of an application holds every event of its stream: read
// back, it is what a consumer of the live stream saw, from AppStart to
// AppEnd, for a job that succeeds and one that fails.
func TestEventLogReplaysTheApplication(t *testing.T) {
	lines := generatedLines(2000)
	for _, tc := range []struct {
		name string
		conf []string
		// suffix is the log's file (or, rolled, directory) name after the
		// application id.
		prefix, suffix string
	}{
		{"defaults: rolled, zstd", nil, "eventlog_v2_", ""},
		{"one gzip file", []string{"spark.eventLog.rolling.enabled=false", "spark.eventLog.compression.codec=gzip"}, "", ".gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			conf := append([]string{"spark.eventLog.enabled=true", "spark.eventLog.dir=" + dir}, tc.conf...)
			var rec recordEvents
			var appID string
			runJob(t, "local-cluster[2,1,256]", func(ctx *Context) error {
				rec.subscribe(ctx)
				appID = ctx.AppID()
				counts, err := ReduceByKey(FlatMap(Parallelize(ctx, lines, 4), testWords), testSum, 3).Collect()
				if err != nil {
					return err
				}
				if diff := gocmp.Diff(referenceWordCount(lines), countsMap(t, counts)); diff != "" {
					t.Errorf("word count (-want +got):\n%s", diff)
				}
				_, err = RunPartitions(ctx, square, []int{1, 2, 3})
				return err
			}, conf...)
			l, got := readLog(t, dir)
			if want := tc.prefix + appID + tc.suffix; !strings.HasSuffix(l.Path, "/"+want) || l.InProgress {
				t.Errorf("log %s (in progress: %v), want a finished %s", l.Path, l.InProgress, want)
			}
			if start, ok := got[0].(*events.AppStart); !ok || start.AppID != appID {
				t.Errorf("first event %#v, want AppStart of %s", got[0], appID)
			}
			if end, ok := got[len(got)-1].(*events.AppEnd); !ok || end.Err != "" {
				t.Errorf("last event %#v, want AppEnd without error", got[len(got)-1])
			}
			// The test's consumer subscribed once the application ran:
			// from there on it saw what the log holds.
			if len(rec.events) < 10 || len(rec.events) > len(got) {
				t.Fatalf("%d events seen live, %d in the log", len(rec.events), len(got))
			}
			if diff := gocmp.Diff(rec.events, got[len(got)-len(rec.events):]); diff != "" {
				t.Errorf("the log's events after the application started (-live +log):\n%s", diff)
			}
			n := count(got)
			want := map[string]int{"JobStart": 2, "JobEnd": 2, "StageSubmitted": 3, "StageCompleted": 3,
				"TaskStart": 4 + 3 + 3, "TaskEnd": 4 + 3 + 3, "TaskEnd SUCCESS": 4 + 3 + 3}
			for k, v := range want {
				if n[k] != v {
					t.Errorf("%d %s events, want %d (all: %v)", n[k], k, v, n)
				}
			}
		})
	}
}

func TestEventLogOfAFailedApplication(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	code := runDriver([]string{"--master", "local-cluster[1,2,256]", "--conf", "spark.task.maxFailures=2", "--conf", "drover.log.level=error",
		"--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.dir=" + dir}, &stderr,
		func(ctx *Context) error {
			_, err := RunPartitions(ctx, fails, []string{"ok", "bad", "fine"})
			return err
		})
	if code != 1 {
		t.Fatalf("exit code %d, want 1:\n%s", code, stderr.String())
	}
	_, got := readLog(t, dir)
	end, ok := got[len(got)-1].(*events.AppEnd)
	if !ok || !strings.Contains(end.Err, "bad record: bad") {
		t.Fatalf("last event %#v, want AppEnd with the task's panic", got[len(got)-1])
	}
	var stageErr, jobErr string
	var failedReasons []string
	for _, e := range got {
		switch e := e.(type) {
		case *events.StageCompleted:
			stageErr = e.Err
		case *events.JobEnd:
			jobErr = e.Err
		case *events.TaskEnd:
			if e.State == events.TaskFailed {
				failedReasons = append(failedReasons, e.Reason)
				if e.Partition != 1 {
					t.Errorf("partition %d failed, want only partition 1 (\"bad\")", e.Partition)
				}
			}
		}
	}
	if stageErr == "" || jobErr == "" {
		t.Errorf("stage error %q, job error %q; want both", stageErr, jobErr)
	}
	// spark.task.maxFailures=2: the bad partition's two attempts.
	if len(failedReasons) != 2 || !strings.Contains(failedReasons[0], "panic: bad record: bad") {
		t.Errorf("failed tasks' reasons %q, want the panic twice", failedReasons)
	}
}
