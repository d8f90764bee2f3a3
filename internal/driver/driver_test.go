package driver

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/master"
)

func localOptions(t *testing.T, pairs ...string) Options {
	t.Helper()
	conf := config.New().Set(config.UIEnabled.Key(), "false").Set(config.ShowConsoleProgress.Key(), "false")
	for _, kv := range pairs {
		k, v, _ := strings.Cut(kv, "=")
		conf.Set(k, v)
	}
	m, err := master.Parse("local[2]")
	if err != nil {
		t.Fatal(err)
	}
	return Options{Conf: conf, Master: m, Logger: slog.New(slog.DiscardHandler), Console: &strings.Builder{}}
}

// TestRun: the application runs with an assembled driver; its error or
// panic is Run's; clean-ups registered with AtStop run after the cluster
// manager stopped, before Run returns; invalid settings stop Run before
// the application starts.
func TestRun(t *testing.T) {
	errApp := errors.New("the application failed")
	testCases := map[string]struct {
		pairs     []string
		app       func(ctx context.Context, d *Driver) error
		wantErr   string
		wantRan   bool
		wantSwept bool
	}{
		"success": {
			app: func(ctx context.Context, d *Driver) error {
				if d.AppID() == "" || d.Scheduler() == nil || d.Graph() == nil || d.Backend() == nil || d.Events() == nil {
					return errors.New("the driver is not assembled")
				}
				if d.Backend().DefaultParallelism() != 2 {
					return errors.New("local[2] does not have 2 cores")
				}
				return nil
			},
			wantRan: true, wantSwept: true,
		},
		"the application's error": {
			app:     func(context.Context, *Driver) error { return errApp },
			wantErr: "the application failed", wantRan: true, wantSwept: true,
		},
		"a panic": {
			app:     func(context.Context, *Driver) error { panic("boom") },
			wantErr: "the application panicked: boom", wantRan: true, wantSwept: true,
		},
		"invalid dynamic allocation on local-cluster is checked first": {
			pairs: []string{"spark.dynamicAllocation.enabled=true", "spark.dynamicAllocation.minExecutors=3",
				"spark.dynamicAllocation.maxExecutors=2"},
			wantErr: "dynamic allocation",
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			opts := localOptions(t, tc.pairs...)
			if strings.HasPrefix(name, "invalid dynamic allocation") {
				m, err := master.Parse("local-cluster[2,1,256]")
				if err != nil {
					t.Fatal(err)
				}
				opts.Master = m
			}
			var ran, swept bool
			err := Run(context.Background(), opts, func(ctx context.Context, d *Driver) error {
				ran = true
				d.AtStop(func(context.Context) { swept = true })
				if tc.app == nil {
					return nil
				}
				return tc.app(ctx, d)
			})
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Run: %v, want an error containing %q", err, tc.wantErr)
			}
			if diff := cmp.Diff([]bool{tc.wantRan, tc.wantSwept}, []bool{ran, swept}); diff != "" {
				t.Errorf("application ran, swept at stop (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTaskMemory: spark.memory.fraction of the executor's memory, shared
// by its cores, as each master kind sizes executors.
func TestTaskMemory(t *testing.T) {
	testCases := map[string]struct {
		master string
		pairs  []string
		want   int64
	}{
		"local: the driver's memory over its threads": {master: "local[4]", pairs: []string{"spark.driver.memory=1g"},
			want: 644245094 / 4},
		"local-cluster: the URL's memory over its cores": {master: "local-cluster[2,2,512]", want: 322122547 / 2},
		"kubernetes: spark.executor.memory over spark.executor.cores": {master: "k8s://https://127.0.0.1:6443",
			pairs: []string{"spark.executor.memory=2g", "spark.executor.cores=4", "spark.memory.fraction=0.5"},
			want:  (1 << 30) / 4},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			conf := config.New()
			for _, kv := range tc.pairs {
				k, v, _ := strings.Cut(kv, "=")
				conf.Set(k, v)
			}
			m, err := master.Parse(tc.master)
			if err != nil {
				t.Fatal(err)
			}
			if got := taskMemory(conf, m); got != tc.want {
				t.Errorf("taskMemory = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAddress: under local masters the UI listens where spark.driver.host
// and spark.driver.bindAddress (which falls back to the host) say.
func TestAddress(t *testing.T) {
	local := master.URL{Kind: master.Local, Threads: 1}
	testCases := map[string]struct {
		pairs          []string
		host, wantBind string
	}{
		"loopback":         {pairs: []string{"spark.driver.host=127.0.0.1"}, host: "127.0.0.1", wantBind: "127.0.0.1"},
		"a host's address": {pairs: []string{"spark.driver.host=10.1.2.3"}, host: "10.1.2.3", wantBind: "10.1.2.3"},
		"every interface":  {pairs: []string{"spark.driver.host=10.1.2.3", "spark.driver.bindAddress=0.0.0.0"}, host: "10.1.2.3", wantBind: "0.0.0.0"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			conf := config.New()
			for _, kv := range tc.pairs {
				k, v, _ := strings.Cut(kv, "=")
				conf.Set(k, v)
			}
			host, bind := address(conf, local)
			if diff := cmp.Diff([]string{tc.host, tc.wantBind}, []string{host, bind}); diff != "" {
				t.Errorf("host, bind (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEveryClusterManagerIsLinked: the driver links every cluster manager,
// so a binary built on drover serves every kind of master URL.
func TestEveryClusterManagerIsLinked(t *testing.T) {
	for _, k := range []master.Kind{master.Local, master.LocalCluster, master.Kubernetes} {
		if !master.Available(k) {
			t.Errorf("no %s cluster manager is linked into the driver", k)
		}
	}
}
