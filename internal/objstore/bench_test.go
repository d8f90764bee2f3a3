//go:build integration

package objstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// BenchmarkUpload writes objects of DROVER_BENCH_BYTES (256 MiB by
// default) through a Writer in 64 KiB writes, as a task of SaveAsTextFile
// does, stages them and completes them, on versitygw on loopback. Besides
// the time, it reports the CPU each side spends per GiB uploaded, Complete
// not included: client-cpu-s/GiB is this process (the SDK's signing and
// checksums, the copies into part buffers, the sockets), server-cpu-s/GiB
// is versitygw's (its ETag MD5, checksums, payload hash, sockets and
// files). On two cores that share the job and the store, the sum is what
// the upload takes from the job. payload=signed is the SDK's default over
// plain http (a signed SHA-256 of each part), payload=unsigned drover's (a
// signed CRC32). Like the other object-storage benchmarks, it runs only
// with DROVER_VERSITYGW set, or in CI.
func BenchmarkUpload(b *testing.B) {
	if os.Getenv(envvar.VersityGW) == "" && !testenv.InCI() {
		b.Skipf("%s is unset: set it to the directory of versitygw to run the upload benchmark", envvar.VersityGW)
	}
	size := int64(256 << 20)
	if s := os.Getenv("DROVER_BENCH_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("DROVER_BENCH_BYTES=%q: want a positive number of bytes", s)
		}
		size = n
	}
	srv := testenv.NewS3(b)
	ctx := context.Background()
	if err := srv.CreateBucket(ctx, "data"); err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = "0123456789abcdef"[(i*7+i/13)%16]
	}
	for _, unsigned := range []bool{false, true} {
		name := map[bool]string{false: "payload=signed", true: "payload=unsigned"}[unsigned]
		b.Run(name, func(b *testing.B) {
			store := objstore.New(objstore.Config{Endpoint: srv.Endpoint, PathStyle: true, Region: srv.Region,
				AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, SignPayloadOverHTTP: !unsigned})
			benchUpload(ctx, b, srv, store, chunk, size)
		})
	}
}

func benchUpload(ctx context.Context, b *testing.B, srv *testenv.S3, store *objstore.Store, chunk []byte, size int64) {
	var client, server time.Duration
	b.SetBytes(size)
	for i := 0; b.Loop(); i++ {
		u := objstore.URI{Bucket: "data", Key: fmt.Sprint("obj", i)}
		c0, cerr := testenv.ProcessCPU(0)
		s0, serr := testenv.ProcessCPU(srv.PID())
		if cerr != nil || serr != nil {
			b.Fatal(cerr, serr)
		}
		w, err := store.Create(ctx, u)
		if err != nil {
			b.Fatal(err)
		}
		for n := int64(0); n < size; {
			m := min(int64(len(chunk)), size-n)
			if _, err := w.Write(chunk[:m]); err != nil {
				b.Fatal(err)
			}
			n += m
		}
		p, err := w.Stage()
		if err != nil {
			b.Fatal(err)
		}
		c1, _ := testenv.ProcessCPU(0)
		s1, _ := testenv.ProcessCPU(srv.PID())
		client += c1 - c0
		server += s1 - s0
		if err := store.Complete(ctx, p); err != nil {
			b.Fatal(err)
		}
		if got, err := store.Size(ctx, u); err != nil || got != size {
			b.Fatalf("Size(%s) = %d, %v; want %d", u, got, err, size)
		}
		if err := store.Delete(ctx, u); err != nil {
			b.Fatal(err)
		}
	}
	gib := float64(b.N) * float64(size) / (1 << 30)
	b.ReportMetric(client.Seconds()/gib, "client-cpu-s/GiB")
	b.ReportMetric(server.Seconds()/gib, "server-cpu-s/GiB")
}
