package inputsplit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// split is a split as the table below writes it.
type split struct {
	File        string
	Start, Size int64
	Compression string
}

// TestLines: files cut at spark.files.maxPartitionBytes or each core's
// share (never below 4 MiB), compressed files whole, hidden files left out.
func TestLines(t *testing.T) {
	const mib = 1 << 20
	testCases := map[string]struct {
		files       map[string]int64
		path        string // relative to the directory; "" for the directory
		maxBytes    int64
		parallelism int
		want        []split
		wantErr     string
	}{
		"one small file, one split": {
			files: map[string]int64{"a.txt": 10}, maxBytes: 128 * mib, parallelism: 2,
			want: []split{{"a.txt", 0, 10, ""}},
		},
		"cut at max partition bytes": {
			files: map[string]int64{"a.txt": 10 * mib}, maxBytes: 4 * mib, parallelism: 1,
			want: []split{{"a.txt", 0, 4 * mib, ""}, {"a.txt", 4 * mib, 4 * mib, ""}, {"a.txt", 8 * mib, 2 * mib, ""}},
		},
		"each core's share, not below 4 MiB": {
			files: map[string]int64{"a.txt": 12 * mib}, maxBytes: 128 * mib, parallelism: 8,
			want: []split{{"a.txt", 0, 4 * mib, ""}, {"a.txt", 4 * mib, 4 * mib, ""}, {"a.txt", 8 * mib, 4 * mib, ""}},
		},
		"compressed files whole, hidden ones left out, empty ones kept": {
			files: map[string]int64{"a.gz": 9 * mib, "b.txt": 0, "_SUCCESS": 0, ".hidden": 5}, maxBytes: 4 * mib, parallelism: 1,
			want: []split{{"a.gz", 0, 9 * mib, "gzip"}, {"b.txt", 0, 0, ""}},
		},
		"a glob": {
			files: map[string]int64{"a.txt": 1, "b.txt": 2, "c.log": 3}, path: "*.txt", maxBytes: 4 * mib, parallelism: 1,
			want: []split{{"a.txt", 0, 1, ""}, {"b.txt", 0, 2, ""}},
		},
		"no match": {files: map[string]int64{"a.txt": 1}, path: "*.csv", wantErr: "no file matches"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for f, size := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), make([]byte, size), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path := dir
			if tc.path != "" {
				path = filepath.Join(dir, tc.path)
			}
			splits, err := Lines(context.Background(), path, Options{MaxPartitionBytes: tc.maxBytes, Parallelism: tc.parallelism})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []split
			for _, s := range splits {
				got = append(got, split{filepath.Base(s.Path), s.Start, s.Size, s.Compression})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("splits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLocalFilesCarryTheirModTime: a local file's splits name its
// modification time, so that rewriting the input changes its lineage.
func TestLocalFilesCarryTheirModTime(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(f, []byte("one line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	if err := os.Chtimes(f, when, when); err != nil {
		t.Fatal(err)
	}
	splits, err := Lines(context.Background(), dir, Options{MaxPartitionBytes: 1 << 20, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(splits) != 1 || splits[0].ModTime != when.UnixNano() {
		t.Errorf("splits %+v, want one with ModTime %d", splits, when.UnixNano())
	}
}
