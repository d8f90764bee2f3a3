package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-project/drover"
	"github.com/drover-project/drover/internal/envvar"
)

// TestMain lets the test binary be the executor processes of
// local-cluster jobs, as an application's main does.
func TestMain(m *testing.M) {
	if os.Getenv(envvar.Role) == envvar.RoleExecutor {
		drover.Main(nil)
	}
	os.Exit(m.Run())
}

func TestSortIsOrderedAndComplete(t *testing.T) {
	for _, master := range []string{"local[*]", "local-cluster[3,1,256]"} {
		t.Run(master, func(t *testing.T) {
			const n = 50_000
			var stderr bytes.Buffer
			code := drover.Run([]string{"--master", master, "--conf", "drover.log.level=warn"}, &stderr, func(ctx *drover.Context) error {
				summaries, err := drover.MapPartitions(Sort(ctx, n, 5), summarize).Collect()
				if err != nil {
					return err
				}
				if len(summaries) != 5 {
					t.Errorf("%d partitions, want 5", len(summaries))
				}
				for i, s := range summaries {
					if s.Count < n/5/3 {
						t.Errorf("partition %d has %d records: ranges from the sample are badly balanced", i, s.Count)
					}
				}
				return Check(summaries, n)
			})
			if code != 0 {
				t.Fatalf("exit code %d:\n%s", code, stderr.String())
			}
		})
	}
}

func TestCheckCatchesDisorder(t *testing.T) {
	ok := []Summary{{Count: 1, First: "a", Last: "a", Ordered: true, Checksum: Checksum(Record(0))}}
	if err := Check(ok, 1); err != nil {
		t.Fatalf("Check(valid) = %v", err)
	}
	if err := Check([]Summary{{Count: 1, Ordered: true, Checksum: 7}}, 1); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("Check(changed record) = %v", err)
	}
	bad := []Summary{{Count: 1, First: "b", Last: "b", Ordered: true}, {Count: 1, First: "a", Last: "a", Ordered: true}}
	if err := Check(bad, 2); err == nil || !strings.Contains(err.Error(), "before the end of the previous") {
		t.Errorf("Check(partitions out of order) = %v", err)
	}
	if err := Check([]Summary{{Count: 3, Ordered: false}}, 3); err == nil {
		t.Error("Check(unsorted partition) succeeded")
	}
	if err := Check([]Summary{{Count: 2, Ordered: true}}, 3); err == nil || !strings.Contains(err.Error(), "want 3") {
		t.Errorf("Check(lost records) = %v", err)
	}
}

// BenchmarkSort sorts DROVER_BENCH_SORT_RECORDS 100-byte records (10.7
// million, 1 GiB, by default) on local-cluster[2,1,2048]; the MB/s it
// reports is the data shuffled per second (go test -bench Sort -benchtime 1x).
func BenchmarkSort(b *testing.B) { benchmarkSort(b, "false") }

// BenchmarkSortMutualTLS is BenchmarkSort with every connection (the
// shuffle's block fetches above all) mutual TLS 1.3, as on Kubernetes.
func BenchmarkSortMutualTLS(b *testing.B) { benchmarkSort(b, "true") }

func benchmarkSort(b *testing.B, crypto string) {
	n := int64(1<<30) / recordSize
	if s := os.Getenv("DROVER_BENCH_SORT_RECORDS"); s != "" {
		var err error
		if n, err = strconv.ParseInt(s, 10, 64); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n * recordSize)
	var stderr strings.Builder
	code := drover.Run([]string{"--master", "local-cluster[2,1,2048]", "--conf", "drover.log.level=warn",
		"--conf", "spark.network.crypto.enabled=" + crypto}, &stderr,
		func(ctx *drover.Context) error {
			for b.Loop() {
				if _, err := drover.MapPartitions(Sort(ctx, n, 16), summarize).Collect(); err != nil {
					return err
				}
			}
			return nil
		})
	if code != 0 {
		b.Fatalf("exit code %d:\n%s", code, stderr.String())
	}
}
