//go:build integration

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/testenv"
)

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
