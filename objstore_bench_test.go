//go:build integration

package drover

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// wideRow is a record of ten string columns of equal width (32 hex digits,
// 36 bytes each in a Parquet file): two of them are a fifth of its bytes.
type wideRow struct {
	C0 string `parquet:"c0"`
	C1 string `parquet:"c1"`
	C2 string `parquet:"c2"`
	C3 string `parquet:"c3"`
	C4 string `parquet:"c4"`
	C5 string `parquet:"c5"`
	C6 string `parquet:"c6"`
	C7 string `parquet:"c7"`
	C8 string `parquet:"c8"`
	C9 string `parquet:"c9"`
}

// wideRowBytes is about a wideRow's size in a Parquet file, to size a data
// set in bytes: PLAIN byte arrays of a 4-byte length and 32 digits, which
// snappy shortens by a sixth (measured).
const wideRowBytes = 303

// wideProjection is two of wideRow's ten columns.
type wideProjection struct {
	C2 string `parquet:"c2"`
	C7 string `parquet:"c7"`
}

// splitmix64 is a fast, well-mixed hash: generated data that compresses
// as little as random data, reproducible from the row number.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// hexDigits is n hex digits drawn from seed.
func hexDigits(seed uint64, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	var x uint64
	for i := range b {
		if i%16 == 0 {
			seed++
			x = splitmix64(seed)
		}
		b[i] = digits[x&15]
		x >>= 4
	}
	return string(b)
}

var (
	benchWideRow = RegisterMap("bench.wideRow", func(n int64) wideRow {
		s := uint64(n) * 64
		return wideRow{hexDigits(s, 32), hexDigits(s+2, 32), hexDigits(s+4, 32), hexDigits(s+6, 32), hexDigits(s+8, 32),
			hexDigits(s+10, 32), hexDigits(s+12, 32), hexDigits(s+14, 32), hexDigits(s+16, 32), hexDigits(s+18, 32)}
	})
	// benchLine is a line of 96 hex digits (97 bytes with its newline).
	benchLine = RegisterMap("bench.line", func(n int64) string { return hexDigits(uint64(n)*8, 96) })
)

// benchBytes is how much the object-storage benchmarks write and read:
// DROVER_BENCH_BYTES, 1 GiB by default.
func benchBytes(b *testing.B) int64 {
	if s := os.Getenv("DROVER_BENCH_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("DROVER_BENCH_BYTES=%q: want a positive number of bytes", s)
		}
		return n
	}
	return 1 << 30
}

// benchS3 starts versitygw for a benchmark. Benchmarks move gigabytes
// through it, so they run only when asked to: with DROVER_VERSITYGW set
// (hack/bench sets it), or in CI, where a missing server fails them.
func benchS3(b *testing.B) *testenv.S3 {
	b.Helper()
	if os.Getenv(envvar.VersityGW) == "" && !testenv.InCI() {
		b.Skipf("%s is unset: set it to the directory of versitygw, DROVER_VERSITYGW=$(./hack/build-versitygw.sh | tail -1), to run the object-storage benchmarks", envvar.VersityGW)
	}
	srv := testenv.NewS3(b)
	if err := srv.CreateBucket(context.Background(), "bench"); err != nil {
		b.Fatal(err)
	}
	return srv
}

// s3Store is drover's client of srv with its account's keys.
func s3Store(srv *testenv.S3, endpoint string) *objstore.Store {
	return objstore.New(objstore.Config{Endpoint: endpoint, PathStyle: true, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
}

// benchDriver runs job on local-cluster[2,1,2048], the master of the word
// count benchmark, and fails b if it fails.
func benchDriver(b *testing.B, job func(ctx *Context) error, conf ...string) {
	b.Helper()
	args := []string{"--master", "local-cluster[2,1,2048]", "--conf", "drover.log.level=warn"}
	for _, c := range conf {
		args = append(args, "--conf", c)
	}
	var stderr strings.Builder
	if code := runDriver(args, &stderr, job); code != 0 {
		b.Fatalf("exit code %d:\n%s", code, stderr.String())
	}
}

// benchSaves times save writing the same data to a local directory and to
// S3, alternately (the machine's speed drifts; each iteration measures
// both, in turns first), and reports each one's seconds per operation, the
// part of the S3 time the driver's commit took (completing the uploads:
// versitygw copies the parts into the object), and the bytes of the S3
// output.
func benchSaves(b *testing.B, save func(ctx *Context, dir string) error) {
	srv := benchS3(b)
	store := s3Store(srv, srv.Endpoint)
	localDir := b.TempDir()
	var commitStart time.Time
	hook := func(completed int) error {
		if completed == 0 {
			commitStart = time.Now()
		}
		return nil
	}
	var local, remote, commit time.Duration
	var written int64
	cpu0, cpuErr := testenv.ProcessCPU(srv.PID())
	benchDriver(b, func(ctx *Context) error {
		ctx.commitHook = hook
		i := 0
		for b.Loop() {
			for k := range 2 {
				toS3 := (i+k)%2 == 1
				dir := filepath.Join(localDir, fmt.Sprint("out", i))
				if toS3 {
					dir = fmt.Sprintf("s3://bench/out%d", i)
				}
				start := time.Now()
				if err := save(ctx, dir); err != nil {
					return err
				}
				elapsed := time.Since(start)
				if !toS3 {
					local += elapsed
					if err := os.RemoveAll(dir); err != nil {
						return err
					}
					continue
				}
				remote += elapsed
				commit += elapsed - commitStart.Sub(start) // from the commit to the save's end
				u, _ := objstore.Parse(dir)
				objs, err := store.List(ctx, dir)
				if err != nil {
					return err
				}
				written = 0
				for _, o := range objs {
					written += o.Size
				}
				if err := store.RemovePrefix(ctx, u); err != nil {
					return err
				}
			}
			i++
		}
		return nil
	}, srv.Conf()...)
	b.SetBytes(written)
	b.ReportMetric(local.Seconds()/float64(b.N), "local-s/op")
	b.ReportMetric(remote.Seconds()/float64(b.N), "s3-s/op")
	b.ReportMetric(commit.Seconds()/float64(b.N), "s3-commit-s/op")
	b.ReportMetric(float64(written), "output-bytes")
	if cpu1, err := testenv.ProcessCPU(srv.PID()); err == nil && cpuErr == nil {
		// The store shares this machine's cores with the job: what it
		// spent is time the S3 runs could not use.
		b.ReportMetric((cpu1-cpu0).Seconds()/float64(b.N), "server-cpu-s/op")
	}
}

// BenchmarkObjectStorageSaveAsTextFile writes 1 GiB of lines generated by
// the tasks with SaveAsTextFile to S3 (versitygw on loopback) and, as the
// baseline, the same job to a local directory on the same disk.
func BenchmarkObjectStorageSaveAsTextFile(b *testing.B) {
	lines := benchBytes(b) / 97
	benchSaves(b, func(ctx *Context, dir string) error {
		return Map(Range(ctx, 0, lines, 1, 8), benchLine).SaveAsTextFile(dir)
	})
}

// BenchmarkObjectStorageSaveAsParquet writes about 1 GiB of Parquet (ten
// string columns of random hex digits, which snappy barely compresses)
// generated by the tasks with SaveAsParquet to S3 and, as the baseline, to
// a local directory.
func BenchmarkObjectStorageSaveAsParquet(b *testing.B) {
	rows := benchBytes(b) / wideRowBytes
	benchSaves(b, func(ctx *Context, dir string) error {
		return Map(Range(ctx, 0, rows, 1, 8), benchWideRow).SaveAsParquet(dir)
	})
}

// BenchmarkObjectStorageParquetProjection reads two of the ten columns of
// about 1 GiB of Parquet in S3, through a proxy that counts the bytes the
// store serves, and reports them with the files' size.
func BenchmarkObjectStorageParquetProjection(b *testing.B) {
	srv := benchS3(b)
	proxy := newCountingProxy(b, srv.Endpoint)
	rows := benchBytes(b) / wideRowBytes
	const dir = "s3://bench/wide"
	var fileBytes, served, requests int64
	benchDriver(b, func(ctx *Context) error {
		if err := Map(Range(ctx, 0, rows, 1, 8), benchWideRow).SaveAsParquet(dir); err != nil {
			return err
		}
		var err error
		if fileBytes, err = objectBytes(ctx, s3Store(srv, srv.Endpoint), dir); err != nil {
			return err
		}
		served0, requests0 := proxy.served.Load(), proxy.requests.Load()
		for b.Loop() {
			n, err := ReadParquet[wideProjection](ctx, dir).Count()
			if err != nil {
				return err
			}
			if n != rows {
				return fmt.Errorf("read %d rows, want %d", n, rows)
			}
		}
		served, requests = proxy.served.Load()-served0, proxy.requests.Load()-requests0
		return nil
	}, append(srv.Conf(), "spark.hadoop.fs.s3a.endpoint="+proxy.URL)...)
	b.SetBytes(fileBytes)
	b.ReportMetric(float64(fileBytes), "file-bytes")
	b.ReportMetric(float64(served)/float64(b.N), "served-bytes/op")
	b.ReportMetric(float64(served)/float64(b.N)/float64(fileBytes), "served-fraction")
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
}

// objectBytes is the total size of the objects under dir.
func objectBytes(ctx context.Context, store *objstore.Store, dir string) (int64, error) {
	objs, err := store.List(ctx, dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, o := range objs {
		n += o.Size
	}
	return n, nil
}

// countingProxy is a reverse proxy on loopback in front of an S3 server
// that counts the response body bytes it passes on: what the store served
// to drover, measured outside drover's own code.
type countingProxy struct {
	URL      string
	served   atomic.Int64
	requests atomic.Int64
}

func newCountingProxy(tb testing.TB, target string) *countingProxy {
	tb.Helper()
	p := &countingProxy{}
	proxy := testenv.SignedProxy(tb, target, nil)
	proxy.ModifyResponse = func(resp *http.Response) error {
		p.requests.Add(1)
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &p.served}
		return nil
	}
	srv := httptest.NewServer(proxy)
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}
