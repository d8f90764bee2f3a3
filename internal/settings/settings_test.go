package settings

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/eventlog"
)

// load is the configuration of pairs as the driver loads it; its error
// when they are invalid.
func load(t *testing.T, pairs ...string) (*config.Conf, error) {
	t.Helper()
	c, _, err := config.Load(config.Sources{Pairs: pairs, Env: func(string) string { return "" }})
	return c, err
}

func TestEventLog(t *testing.T) {
	testCases := map[string]struct {
		pairs   []string
		want    eventlog.Options
		enabled bool
		wantErr string
	}{
		"defaults": {want: eventlog.Options{Dir: "/tmp/spark-events", AppID: "a", Codec: "snappy", Rolling: true, MaxFileSize: 128 << 20}},
		"enabled, uncompressed, one file, overwritten": {
			pairs: []string{"spark.eventLog.enabled=true", "spark.eventLog.compress=false", "spark.eventLog.rolling.enabled=false",
				"spark.eventLog.dir=s3a://b/logs", "spark.eventLog.overwrite=true"},
			want: eventlog.Options{Dir: "s3a://b/logs", AppID: "a", MaxFileSize: 128 << 20, Overwrite: true}, enabled: true,
		},
		"codec and size": {
			pairs: []string{"spark.eventLog.compression.codec=GZIP", "spark.eventLog.rolling.maxFileSize=2m"},
			want:  eventlog.Options{Dir: "/tmp/spark-events", AppID: "a", Codec: "gzip", Rolling: true, MaxFileSize: 2 << 20},
		},
		"an unknown codec": {pairs: []string{"spark.eventLog.compression.codec=lz4"}, wantErr: "spark.eventLog.compression.codec"},
		"files too small":  {pairs: []string{"spark.eventLog.rolling.maxFileSize=1m"}, wantErr: "at least 2m"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			conf, err := load(t, tc.pairs...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, enabled := EventLog(conf, "a")
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(eventlog.Options{}, "Clock", "Logger", "Store")); diff != "" || enabled != tc.enabled {
				t.Errorf("enabled %v, options (-want +got):\n%s", enabled, diff)
			}
		})
	}
}

func TestUIStore(t *testing.T) {
	testCases := map[string]struct {
		pairs []string
		want  appstate.Options
	}{
		"Spark's defaults": {want: appstate.Options{RetainedJobs: 1000, RetainedStages: 1000, RetainedTasks: 100000,
			RetainedDeadExecutors: 100, RetainedRounds: 100}},
		"no dead executors": {
			pairs: []string{"spark.ui.retainedJobs=5", "spark.ui.retainedDeadExecutors=0"},
			want: appstate.Options{RetainedJobs: 5, RetainedStages: 1000, RetainedTasks: 100000,
				RetainedDeadExecutors: -1, RetainedRounds: 100},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			conf, err := load(t, tc.pairs...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, UIStore(conf)); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDynamicAllocation(t *testing.T) {
	testCases := map[string]struct {
		pairs        []string
		cap          int
		initial, max int
		wantErr      string
	}{
		"defaults":                 {max: 1<<31 - 1},
		"initial is the largest":   {pairs: []string{"spark.dynamicAllocation.minExecutors=2", "spark.dynamicAllocation.initialExecutors=3", "spark.executor.instances=1"}, initial: 3, max: 1<<31 - 1},
		"explicit instances count": {pairs: []string{"spark.executor.instances=5"}, initial: 5, max: 1<<31 - 1},
		"capped by local-cluster":  {pairs: []string{"spark.dynamicAllocation.maxExecutors=10"}, cap: 4, max: 4},
		"no shuffle tracking":      {pairs: []string{"spark.dynamicAllocation.shuffleTracking.enabled=false"}, wantErr: "needs an external shuffle service"},
		"initial above max":        {pairs: []string{"spark.dynamicAllocation.maxExecutors=2", "spark.executor.instances=3"}, wantErr: "initial number of executors (3"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			conf, err := load(t, append([]string{"spark.dynamicAllocation.enabled=true"}, tc.pairs...)...)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := DynamicAllocation(conf, tc.cap)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int{tc.initial, tc.max}, []int{cfg.Initial, cfg.Max}); diff != "" {
				t.Errorf("initial, max (-want +got):\n%s", diff)
			}
		})
	}
}
