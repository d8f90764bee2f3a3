package shuffle

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type group struct {
	Key    string
	Values []string
}

// sortGroups collects every group of s.
func sortGroups(t testing.TB, s *Sorter) []group {
	t.Helper()
	var got []group
	if err := s.Groups(func(key []byte, next func() ([]byte, bool)) error {
		g := group{Key: string(key)}
		for v, ok := next(); ok; v, ok = next() {
			g.Values = append(g.Values, string(v))
		}
		got = append(got, g)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// referenceGroups groups records in memory: keys ordered by compare, values
// in insertion order.
func referenceGroups(recs []kv, compare func(a, b string) int) []group {
	byKey := map[string][]string{}
	for _, r := range recs {
		byKey[r.K] = append(byKey[r.K], r.V)
	}
	var out []group
	for k, vs := range byKey {
		out = append(out, group{k, vs})
	}
	slices.SortFunc(out, func(a, b group) int { return compare(a.Key, b.Key) })
	return out
}

func TestSorterGroups(t *testing.T) {
	desc := func(a, b []byte) int { return bytes.Compare(b, a) }
	tests := []struct {
		name      string
		records   int
		keys      int
		budget    int64
		compare   func(a, b []byte) int
		refCmp    func(a, b string) int
		minSpills int
	}{
		{"in memory", 500, 50, 1 << 30, nil, strings.Compare, 0},
		{"spills", 5000, 300, 20000, nil, strings.Compare, 3},
		{"one record per run", 100, 10, 1, nil, strings.Compare, 100},
		{"descending", 5000, 300, 20000, desc, func(a, b string) int { return strings.Compare(b, a) }, 3},
		{"short keys share prefixes", 3000, 200, 10000, nil, strings.Compare, 3},
		{"empty", 0, 1, 100, nil, strings.Compare, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := NewSorter(dir, tt.budget, tt.compare)
			defer s.Close()
			rng := rand.New(rand.NewPCG(3, 4))
			var recs []kv
			for i := range tt.records {
				k := fmt.Sprintf("key-%05d", rng.IntN(tt.keys))
				if tt.name == "short keys share prefixes" {
					k = strings.Repeat("\x00", rng.IntN(12)) + string(rune('a'+rng.IntN(3)))
				}
				r := kv{k, fmt.Sprintf("v%d", i)}
				recs = append(recs, r)
				if err := s.Add([]byte(r.K), []byte(r.V)); err != nil {
					t.Fatal(err)
				}
			}
			if s.Spills() < tt.minSpills {
				t.Errorf("%d spills, want at least %d", s.Spills(), tt.minSpills)
			}
			want := referenceGroups(recs, tt.refCmp)
			if diff := cmp.Diff(want, sortGroups(t, s)); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			// Groups can run again, and after an explicit spill.
			if err := s.Spill(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, sortGroups(t, s)); diff != "" {
				t.Errorf("groups after Spill (-want +got):\n%s", diff)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if names := dirEntries(t, dir); len(names) != 0 {
				t.Errorf("runs left after Close: %v", names)
			}
			if err := s.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

func TestSorterSkewedKeyStreams(t *testing.T) {
	const budget = 4 << 10
	dir := t.TempDir()
	s := NewSorter(dir, budget, nil)
	defer s.Close()
	value := bytes.Repeat([]byte("x"), 100)
	total := 0
	n := 0
	for total < 12*budget {
		binaryValue := fmt.Appendf(value[:0:0], "%06d", n)
		binaryValue = append(binaryValue, value...)
		if err := s.Add([]byte("hot"), binaryValue); err != nil {
			t.Fatal(err)
		}
		total += len(binaryValue)
		n++
	}
	s.Add([]byte("cold"), []byte("c"))
	if s.Spills() < 10 {
		t.Errorf("%d spills, want at least 10", s.Spills())
	}
	var onDisk int64
	for _, name := range dirEntries(t, dir) {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		onDisk += fi.Size()
	}
	if s.SpilledBytes() != onDisk || onDisk < int64(total-budget) {
		t.Errorf("SpilledBytes = %d, the runs hold %d bytes (want them, and nearly all of %d bytes of values)", s.SpilledBytes(), onDisk, total)
	}
	var keys []string
	seen := 0
	if err := s.Groups(func(key []byte, next func() ([]byte, bool)) error {
		keys = append(keys, string(key))
		for v, ok := next(); ok; v, ok = next() {
			if string(key) != "hot" {
				continue
			}
			if want := fmt.Sprintf("%06d", seen); !bytes.HasPrefix(v, []byte(want)) || len(v) != 106 {
				return fmt.Errorf("value %d = %.10q…, want %s…", seen, v, want)
			}
			seen++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Errorf("%d values of the hot key, want %d", seen, n)
	}
	if diff := cmp.Diff([]string{"cold", "hot"}, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

func TestSorterPartialConsumptionAndErrors(t *testing.T) {
	s := NewSorter(t.TempDir(), 50, nil)
	defer s.Close()
	for i := range 30 {
		s.Add(fmt.Appendf(nil, "k%d", i%3), fmt.Appendf(nil, "v%02d", i))
	}
	var got []group
	// Take one value per key: the rest are skipped.
	if err := s.Groups(func(key []byte, next func() ([]byte, bool)) error {
		v, _ := next()
		got = append(got, group{string(key), []string{string(v)}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []group{{"k0", []string{"v00"}}, {"k1", []string{"v01"}}, {"k2", []string{"v02"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.Groups(func([]byte, func() ([]byte, bool)) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("err = %v after %d calls, want stop after 1", err, calls)
	}
	s.Close()
	if err := s.Add(nil, nil); err == nil {
		t.Error("Add after Close: no error")
	}
}

func BenchmarkMapWriter(b *testing.B) {
	m := newTestManager(b, execA, "")
	rng := rand.New(rand.NewPCG(1, 1))
	const records = 100000
	keys := make([][]byte, records)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%010d", rng.IntN(1e9))
	}
	value := bytes.Repeat([]byte("v"), 90)
	b.SetBytes(records * 100)
	task := int64(0)
	for b.Loop() {
		w, err := m.NewMapWriter(0, 0, task, 200, 4<<20)
		if err != nil {
			b.Fatal(err)
		}
		for i, k := range keys {
			if err := w.Write(i%200, k, value); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Commit(); err != nil {
			b.Fatal(err)
		}
		task++
	}
}

func BenchmarkSorter(b *testing.B) {
	dir := b.TempDir()
	rng := rand.New(rand.NewPCG(1, 1))
	const records = 100000
	keys := make([][]byte, records)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%010d", rng.IntN(1e9))
	}
	value := bytes.Repeat([]byte("v"), 90)
	b.SetBytes(records * 100)
	for b.Loop() {
		s := NewSorter(dir, 2<<20, nil) // about 5 runs
		for _, k := range keys {
			if err := s.Add(k, value); err != nil {
				b.Fatal(err)
			}
		}
		n := 0
		if err := s.Groups(func(key []byte, next func() ([]byte, bool)) error {
			for _, ok := next(); ok; _, ok = next() {
				n++
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if n != records {
			b.Fatalf("%d values, want %d", n, records)
		}
		s.Close()
	}
}
