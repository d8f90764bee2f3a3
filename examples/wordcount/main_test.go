package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

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

func TestWordCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "text")
	if err := generate(path, 1<<20); err != nil {
		t.Fatal(err)
	}
	want, err := countByHand(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	var got map[string]int
	code := drover.Run([]string{"--master", "local-cluster[2,1,256]", "--conf", "drover.log.level=warn",
		"--conf", "spark.files.maxPartitionBytes=100000"}, &stderr, func(ctx *drover.Context) error {
		counts, err := Count(ctx, path)
		got = map[string]int{}
		for _, kv := range counts {
			got[kv.Key] = kv.Value
		}
		return err
	})
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr.String())
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("word counts (-hand-written +drover):\n%s", diff)
	}
}

// generate writes size bytes (rounded to whole lines) of text made of words
// drawn from a Zipf distribution over a 50,000-word vocabulary, as in
// natural text; the same size always gives the same file.
func generate(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, 49_999)
	var written int64
	var line []byte
	for written < size {
		line = line[:0]
		for j := range 8 + r.IntN(8) {
			if j > 0 {
				line = append(line, ' ')
			}
			line = append(line, 'w')
			line = strconv.AppendUint(line, zipf.Uint64(), 36)
		}
		line = append(line, '\n')
		n, err := w.Write(line)
		if err != nil {
			f.Close()
			return err
		}
		written += int64(n)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// countByHand is the baseline a Go programmer would write for one machine:
// the file cut at line boundaries into one range per goroutine, each counted
// into its own map, the maps merged.
func countByHand(path string, goroutines int) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	maps := make([]map[string]int, goroutines)
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			start, end := size*int64(g)/int64(goroutines), size*int64(g+1)/int64(goroutines)
			maps[g], errs[g] = countRange(f, start, end)
		})
	}
	wg.Wait()
	total := maps[0]
	for g, m := range maps[1:] {
		if errs[g+1] != nil {
			return nil, errs[g+1]
		}
		for k, v := range m {
			total[k] += v
		}
	}
	return total, errs[0]
}

// countRange counts the words of the lines that start in [start, end). It
// is written for speed: words are split on ASCII whitespace in place, and
// counted through pointers so that only a new word allocates (a map
// assignment with a converted key would allocate for every word).
func countRange(f *os.File, start, end int64) (map[string]int, error) {
	counts := map[string]*int{}
	pos := start
	if pos > 0 {
		pos--
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, pos, 1<<62), 1<<20)
	if start > 0 {
		skipped, err := r.ReadSlice('\n')
		pos += int64(len(skipped))
		if err != nil {
			return map[string]int{}, nil
		}
	}
	add := func(w []byte) {
		if c := counts[string(w)]; c != nil {
			*c++
			return
		}
		one := 1
		counts[string(w)] = &one
	}
	for pos < end {
		line, err := r.ReadSlice('\n')
		pos += int64(len(line))
		from := -1
		for i, c := range line {
			if isSpace(c) {
				if from >= 0 {
					add(line[from:i])
					from = -1
				}
			} else if from < 0 {
				from = i
			}
		}
		if from >= 0 {
			add(line[from:])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	out := make(map[string]int, len(counts))
	for w, c := range counts {
		out[w] = *c
	}
	return out, nil
}

// benchFile is the text the benchmarks count: DROVER_BENCH_BYTES bytes
// (1 GiB by default), generated once and kept under ~/.cache/drover.
func benchFile(b *testing.B) string {
	size := int64(1 << 30)
	if s := os.Getenv("DROVER_BENCH_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatalf("DROVER_BENCH_BYTES: %v", err)
		}
		size = n
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(cache, "drover", "bench")
	path := filepath.Join(dir, fmt.Sprintf("words-%d.txt", size))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := generate(tmp, size); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkWordCount compares drover on local-cluster[2,1,2048] (two
// executor processes of one core) with the hand-written count on two
// goroutines, over the same file (go test -bench WordCount -benchtime 3x).
func BenchmarkWordCount(b *testing.B) {
	path := benchFile(b)
	fi, _ := os.Stat(path)
	b.Run("handwritten-2-goroutines", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for b.Loop() {
			if _, err := countByHand(path, 2); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The default (spark.authenticate's HMAC token, no encryption), and
	// with every connection mutual TLS 1.3 as on Kubernetes: the cost of
	// encryption, measured in the same run.
	for _, v := range []struct{ name, crypto string }{
		{"drover-local-cluster[2,1,2048]", "false"},
		{"drover-local-cluster[2,1,2048]-tls", "true"},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			var stderr strings.Builder
			code := drover.Run([]string{"--master", "local-cluster[2,1,2048]", "--conf", "drover.log.level=warn",
				"--conf", "spark.network.crypto.enabled=" + v.crypto}, &stderr,
				func(ctx *drover.Context) error {
					for b.Loop() {
						if _, err := Count(ctx, path); err != nil {
							return err
						}
					}
					return nil
				})
			if code != 0 {
				b.Fatalf("exit code %d:\n%s", code, stderr.String())
			}
		})
	}
}
