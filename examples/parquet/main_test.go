package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/testenv"
)

// TestMain lets the test binary be the executor processes of
// local-cluster jobs, as an application's main does.
func TestMain(m *testing.M) {
	if os.Getenv(envvar.Role) == envvar.RoleExecutor {
		drover.Main(nil)
	}
	os.Exit(m.Run())
}

// expected totals the sales 0..n-1 by region in one loop, the reference
// for the job.
func expected(n int64) map[string]Totals {
	want := map[string]Totals{}
	for i := range n {
		s := NewSale(i)
		t := want[s.Region]
		t.Sales++
		t.Units += int64(s.Units)
		t.Revenue += float64(s.Units) * s.Price
		want[s.Region] = t
	}
	return want
}

// TestAggregateFromS3 runs the program against a real S3 server
// (versitygw) on local-cluster: the executors write the Parquet files to
// the bucket and read them back, and the totals printed are the ones
// computed directly. Executors take their credentials from the
// environment (testenv.NewS3 sets AWS_*).
func TestAggregateFromS3(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "shop"); err != nil {
		t.Fatal(err)
	}
	const n = 50_000
	stdout := runProgram(t, srv.Conf(), "s3://shop/sales", fmt.Sprint(n), "4")
	want := expected(n)
	got := parseTotals(t, stdout)
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("totals printed (-want +got):\n%s", diff)
	}
	// Sorted by revenue, every region present.
	lines := strings.Split(strings.TrimSpace(stdout), "\n")[1:]
	if len(lines) != len(regions) {
		t.Errorf("%d regions printed, want %d:\n%s", len(lines), len(regions), stdout)
	}
	var keys []string
	out, err := srv.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("shop"), Prefix: aws.String("sales/")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	wantKeys := []string{"sales/_SUCCESS", "sales/part-00000.parquet", "sales/part-00001.parquet", "sales/part-00002.parquet", "sales/part-00003.parquet"}
	if diff := gocmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("objects written (-want +got):\n%s", diff)
	}
}

// TestAggregateLocal is the same job on a local directory.
func TestAggregateLocal(t *testing.T) {
	const n = 20_000
	dir := filepath.Join(t.TempDir(), "sales")
	got := parseTotals(t, runProgram(t, nil, dir, fmt.Sprint(n), "3"))
	if diff := gocmp.Diff(expected(n), got); diff != "" {
		t.Errorf("totals printed (-want +got):\n%s", diff)
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{{}, {"out", "many"}, {"out", "10", "0"}} {
		var stderr bytes.Buffer
		code := drover.Run(append([]string{"--master", "local[1]", "--conf", "drover.log.level=error"}, args...), &stderr,
			func(ctx *drover.Context) error { return run(ctx, &bytes.Buffer{}) })
		if code == 0 || !strings.Contains(stderr.String(), "expected a positive integer") && !strings.Contains(stderr.String(), "usage") {
			t.Errorf("args %q: exit code %d, stderr:\n%s", args, code, stderr.String())
		}
	}
}

// runProgram runs the program's run with args on local-cluster[2,1,512]
// and returns what it printed.
func runProgram(t *testing.T, conf []string, args ...string) string {
	t.Helper()
	flags := []string{"--master", "local-cluster[2,1,512]", "--conf", "drover.log.level=warn"}
	for _, c := range conf {
		flags = append(flags, "--conf", c)
	}
	var stdout, stderr bytes.Buffer
	code := drover.Run(append(flags, args...), &stderr, func(ctx *drover.Context) error { return run(ctx, &stdout) })
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr.String())
	}
	return stdout.String()
}

// parseTotals reads the table run prints.
func parseTotals(t *testing.T, stdout string) map[string]Totals {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "region") {
		t.Fatalf("no table printed:\n%s", stdout)
	}
	got := map[string]Totals{}
	for _, l := range lines[1:] {
		var region string
		var tot Totals
		if _, err := fmt.Sscan(l, &region, &tot.Sales, &tot.Units, &tot.Revenue); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got[region] = tot
	}
	return got
}
