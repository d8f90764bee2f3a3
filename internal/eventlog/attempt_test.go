package eventlog

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover-project/drover/internal/events"
)

// TestDriverRestartAttemptLogs: each attempt of a driver restarted in its
// pod writes its own log, named <appId>_<attemptId> as Spark names an
// attempt's, whether or not the earlier attempt's log was finished: the
// crashed attempt 1 keeps its .inprogress log as it left it, and neither
// Overwrite nor the absence of it is needed for attempt 2.
func TestDriverRestartAttemptLogs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		files []string
	}{
		{"single", Options{Codec: "zstd"}, []string{"drover-1_1.zstd.inprogress", "drover-1_2.zstd"}},
		{"plain", Options{}, []string{"drover-1_1.inprogress", "drover-1_2"}},
		{"rolling", Options{Rolling: true, MaxFileSize: 1 << 30}, []string{
			"eventlog_v2_drover-1_1/appstatus_drover-1_1.inprogress", "eventlog_v2_drover-1_1/events_1_drover-1_1",
			"eventlog_v2_drover-1_2/appstatus_drover-1_2", "eventlog_v2_drover-1_2/events_1_drover-1_2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "spark-events")
			attempt := func(id string, evs []events.Event) *Writer {
				opts := tc.opts
				opts.Dir, opts.AppID, opts.AttemptID = dir, "drover-1", id
				w := write(t, opts, evs)
				w.Flush()
				return w
			}
			evs := sample(20)
			first := attempt("1", evs[:10]) // killed: never closed
			second := attempt("2", evs)
			if err := second.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.files, files(t, dir)); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			logs, err := List(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			type summary struct {
				AppID      string
				InProgress bool
				Events     int
			}
			var got []summary
			for _, l := range logs {
				evs, _ := replayAll(t, l)
				got = append(got, summary{l.AppID, l.InProgress, len(evs)})
			}
			// The names' ids carry the attempt; the order is the logs'
			// modification times', which a coarse clock may make equal.
			want := []summary{{"drover-1_1", true, 10}, {"drover-1_2", false, len(evs)}}
			byID := cmpopts.SortSlices(func(a, b summary) bool { return a.AppID < b.AppID })
			if diff := cmp.Diff(want, got, byID); diff != "" {
				t.Errorf("logs (-want +got):\n%s", diff)
			}
			first.Close() // the test's own clean-up, after the listing
		})
	}
}

func TestAttemptNames(t *testing.T) {
	for _, tc := range []struct{ app, attempt, single, rolling, events, status string }{
		{"drover-1", "", "drover-1.zstd", "eventlog_v2_drover-1", "events_1_drover-1.zstd", "appstatus_drover-1"},
		{"drover-1", "1", "drover-1_1.zstd", "eventlog_v2_drover-1_1", "events_1_drover-1_1.zstd", "appstatus_drover-1_1"},
		{"Spark.App", "12", "spark_app_12.zstd", "eventlog_v2_spark_app_12", "events_1_spark_app_12.zstd", "appstatus_spark_app_12"},
	} {
		n := logName(tc.app, tc.attempt)
		got := []string{singleName(n, "zstd"), rollingDirName(n), eventsName(n, 1, "zstd"), statusName(n, false)}
		if diff := cmp.Diff([]string{tc.single, tc.rolling, tc.events, tc.status}, got); diff != "" {
			t.Errorf("names of %q attempt %q (-want +got):\n%s", tc.app, tc.attempt, diff)
		}
	}
	if _, err := Start(context.Background(), Options{Dir: t.TempDir(), AppID: "a", AttemptID: "../1"}); err == nil {
		t.Error("an attempt id with a slash was taken")
	}
}
