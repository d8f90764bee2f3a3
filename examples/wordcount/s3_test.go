//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/testenv"
)

// BenchmarkObjectStorageWordCount counts the words of the benchmark's file
// uploaded to S3 (versitygw on loopback; the upload is not timed), and of
// the same file on local disk, on BenchmarkWordCount's master. Each
// iteration runs both, in turns first, since this machine's speed drifts;
// it reports each one's seconds per count. It runs only with
// DROVER_VERSITYGW set (hack/bench sets it) or in CI.
func BenchmarkObjectStorageWordCount(b *testing.B) {
	if os.Getenv(envvar.VersityGW) == "" && !testenv.InCI() {
		b.Skipf("%s is unset: set it to the directory of versitygw, DROVER_VERSITYGW=$(./hack/build-versitygw.sh | tail -1), to run the object-storage benchmarks", envvar.VersityGW)
	}
	path := benchFile(b)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	srv := testenv.NewS3(b)
	if err := srv.CreateBucket(context.Background(), "bench"); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	_, err = srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String("words.txt"),
		Body: f, ContentLength: aws.Int64(fi.Size())})
	f.Close()
	if err != nil {
		b.Fatalf("uploading %s: %v", path, err)
	}
	inputs := []string{path, "s3://bench/words.txt"}
	var elapsed [2]time.Duration
	b.SetBytes(fi.Size())
	var stderr strings.Builder
	args := []string{"--master", "local-cluster[2,1,2048]", "--conf", "drover.log.level=warn"}
	for _, c := range srv.Conf() {
		args = append(args, "--conf", c)
	}
	code := drover.Run(args, &stderr, func(ctx *drover.Context) error {
		i := 0
		for b.Loop() {
			var counts [2]map[string]int
			for k := range 2 {
				in := (i + k) % 2
				start := time.Now()
				got, err := Count(ctx, inputs[in])
				elapsed[in] += time.Since(start)
				if err != nil {
					return err
				}
				counts[in] = make(map[string]int, len(got))
				for _, kv := range got {
					counts[in][kv.Key] = kv.Value
				}
			}
			if i == 0 {
				if diff := gocmp.Diff(counts[0], counts[1]); diff != "" {
					return fmt.Errorf("counts from S3 differ from the local file's (-local +s3):\n%s", diff)
				}
			}
			i++
		}
		return nil
	})
	if code != 0 {
		b.Fatalf("exit code %d:\n%s", code, stderr.String())
	}
	b.ReportMetric(elapsed[0].Seconds()/float64(b.N), "local-s/op")
	b.ReportMetric(elapsed[1].Seconds()/float64(b.N), "s3-s/op")
}
