package dataflow

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/codec"
)

// Every line belongs to exactly one split, whatever the split size, with
// \n and \r\n endings and with or without a final newline.
func TestTextSplitsReadEveryLineOnce(t *testing.T) {
	for name, content := range map[string]string{
		"unix":             "alpha\nbeta\n\ngamma delta\nepsilon\n",
		"windows":          "alpha\r\nbeta\r\n\r\ngamma\r\n",
		"no final newline": "one\ntwo\nthree",
		"one long line":    strings.Repeat("x", 5000) + "\nshort\n",
		// Longer than a read chunk (64 KiB for small splits): lines cross chunks.
		"lines over chunks": strings.Repeat(strings.Repeat("y", 150_000)+"\nz\n", 3),
	} {
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		want := strings.Split(strings.TrimSuffix(strings.ReplaceAll(content, "\r\n", "\n"), "\n"), "\n")
		size := int64(len(content))
		splits := []int64{size, size + 1, 4999, 5000, 5001, 70_000, 150_001}
		for n := int64(1); n <= 40 && size < 10_000; n++ {
			splits = append(splits, n)
		}
		for _, split := range splits {
			var got []string
			var read int64
			for start := int64(0); start < size; start += split {
				lines := textLines(context.Background(), FileSplit{Path: path, Start: start, Size: min(split, size-start)}, nil, &read)
				if err := lines(func(s string) error { got = append(got, s); return nil }); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s, splits of %d bytes (-want +got):\n%s", name, split, diff)
			}
			// Every line is one split's: the splits' bytes add up to the file.
			if read != size {
				t.Errorf("%s, splits of %d bytes: %d bytes read, want the file's %d", name, split, read, size)
			}
		}
	}
}

func TestRangePartitionsCoverTheRange(t *testing.T) {
	for _, tc := range []struct{ start, end, step int64 }{{0, 10, 1}, {5, -7, -3}, {0, 1, 1}, {3, 3, 1}, {0, 100, 7}} {
		n := &Node{Kind: Range, Start: tc.start, End: tc.end, Step: tc.step, NumPartitions: 3}
		var got []int64
		dec := codec.DecoderFor[int64]()
		for p := range 3 {
			_ = rangeProducer(n, p)(func(rec []byte) error {
				v, _, err := dec(rec)
				got = append(got, v)
				return err
			})
		}
		var want []int64
		for v := tc.start; (tc.step > 0 && v < tc.end) || (tc.step < 0 && v > tc.end); v += tc.step {
			want = append(want, v)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("range(%d, %d, %d) (-want +got):\n%s", tc.start, tc.end, tc.step, diff)
		}
	}
}

func TestComparatorsOrderLikeGo(t *testing.T) {
	ints := []int64{5, -3, 0, 1 << 40, -1 << 40, 7}
	strs := []string{"b", "a", "", "ab", "B", "aa"}
	floats := []float64{2.5, -1, 0, 1e10, -1e-3}
	check := func(name string, kind KeyKind, enc [][]byte, decode func([]byte) any, want any) {
		t.Helper()
		for _, desc := range []bool{false, true} {
			sorted := slices.Clone(enc)
			slices.SortFunc(sorted, Comparator(&SortOrder{Kind: kind, Descending: desc}))
			var got []any
			for _, b := range sorted {
				got = append(got, decode(b))
			}
			w := slices.Clone(want.([]any))
			if desc {
				slices.Reverse(w)
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("%s descending=%v (-want +got):\n%s", name, desc, diff)
			}
		}
	}
	encodeAll := func(vals []any, enc func(any) []byte) [][]byte {
		var out [][]byte
		for _, v := range vals {
			out = append(out, enc(v))
		}
		return out
	}
	var iv, sv, fv []any
	for _, v := range ints {
		iv = append(iv, v)
	}
	for _, v := range strs {
		sv = append(sv, v)
	}
	for _, v := range floats {
		fv = append(fv, v)
	}
	sortedAny := func(v []any, less func(a, b any) int) []any { c := slices.Clone(v); slices.SortFunc(c, less); return c }
	check("int64", KeyInt, encodeAll(iv, func(v any) []byte { b, _ := codec.Encode(v.(int64)); return b }),
		func(b []byte) any { v, _ := codec.Decode[int64](b); return v },
		sortedAny(iv, func(a, b any) int { return compare(a.(int64), b.(int64)) }))
	check("string", KeyString, encodeAll(sv, func(v any) []byte { b, _ := codec.Encode(v.(string)); return b }),
		func(b []byte) any { v, _ := codec.Decode[string](b); return v },
		sortedAny(sv, func(a, b any) int { return strings.Compare(a.(string), b.(string)) }))
	check("float64", KeyFloat64, encodeAll(fv, func(v any) []byte { b, _ := codec.Encode(v.(float64)); return b }),
		func(b []byte) any { v, _ := codec.Decode[float64](b); return v },
		sortedAny(fv, func(a, b any) int { return compare(a.(float64), b.(float64)) }))
}

func TestRangePartitionerUsesBounds(t *testing.T) {
	enc := func(n int64) []byte { b, _ := codec.Encode(n); return b }
	s := &Shuffle{NumPartitions: 3, Partitioner: RangePartitioner, Order: &SortOrder{Kind: KeyInt},
		Bounds: [][]byte{enc(10), enc(20)}}
	part := partitioner(s)
	for key, want := range map[int64]int{-5: 0, 10: 0, 11: 1, 20: 1, 21: 2, 1000: 2} {
		if got := part(enc(key)); got != want {
			t.Errorf("partition of %d = %d, want %d", key, got, want)
		}
	}
}

func TestRangeValues(t *testing.T) {
	const minI, maxI = math.MinInt64, math.MaxInt64
	tests := []struct {
		name             string
		start, end, step int64
		parts            int
		want             []int64
	}{
		{"ascending", 0, 10, 3, 2, []int64{0, 3, 6, 9}},
		{"descending", 10, 0, -4, 3, []int64{10, 6, 2}},
		{"empty", 5, 5, 1, 2, nil},
		{"wrong direction", 0, 10, -1, 2, nil},
		{"near the top", maxI - 3, maxI, 1, 2, []int64{maxI - 3, maxI - 2, maxI - 1}},
		{"near the bottom", minI + 2, minI, -1, 1, []int64{minI + 2, minI + 1}},
		{"whole int64 ascending", minI, maxI, 1 << 62, 3, []int64{minI, -1 << 62, 0, 1 << 62}},
		{"whole int64 descending", maxI, minI, -(1 << 62), 3, []int64{maxI, 1<<62 - 1, -1, -1<<62 - 1}},
		{"step larger than the span", -5, 5, maxI, 4, []int64{-5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int64
			for p := range tt.parts {
				got = slices.AppendSeq(got, rangeValues(tt.start, tt.end, tt.step, p, tt.parts))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// 2^64-1 values in 1,000 partitions: the shares neither overflow nor
	// leave a value out.
	if got := share(math.MaxUint64, 1000, 1000); got != math.MaxUint64 {
		t.Errorf("the last partition ends at %d, want %d", got, uint64(math.MaxUint64))
	}
	if got, want := share(math.MaxUint64, 999, 1000), uint64(math.MaxUint64)/1000*999+uint64(math.MaxUint64)%1000*999/1000; got != want {
		t.Errorf("partition 999 of 1000 starts at %d, want %d", got, want)
	}
}

// An accumulator that grows with every fold (here a list of values) is
// counted in the combiner's size, so a hot key makes the task spill before
// it runs out of memory; a fixed-size one costs its key's estimate only.
func TestCombinerSizeFollowsGrowingAccumulators(t *testing.T) {
	key := []byte("hot")
	lists := MergeCombiner(func(a, b []string) []string { return append(a, b...) })()
	val := codec.EncoderFor[[]string]()(nil, []string{strings.Repeat("x", 100)})
	for range 10_000 {
		if err := lists.Add(key, val); err != nil {
			t.Fatal(err)
		}
	}
	// 10,000 strings of 100 bytes under one key: about 1 MB.
	if got := lists.Size(); got < 900_000 || got > 2_000_000 {
		t.Errorf("size of one key with 1 MB of values estimated at %d bytes", got)
	}
	var drained int
	if err := lists.Drain(func(_, acc []byte) error { drained = len(acc); return nil }); err != nil {
		t.Fatal(err)
	}
	if drained < 1_000_000 || lists.Size() != 0 {
		t.Errorf("drained %d bytes, size after drain %d", drained, lists.Size())
	}

	// The typed path of a fused map-side combine samples the growth.
	typed := MergeCombiner(func(a, b []string) []string { return append(a, b...) })().(interface {
		AddValue([]byte, []string) error
		Size() int64
	})
	for range 10_000 {
		if err := typed.AddValue(key, []string{strings.Repeat("x", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := typed.Size(); got < 900_000 || got > 2_000_000 {
		t.Errorf("typed path: size of one key with 1 MB of values estimated at %d bytes", got)
	}

	sums := MergeCombiner(func(a, b int64) int64 { return a + b })()
	one := codec.EncoderFor[int64]()(nil, 1)
	for range 10_000 {
		if err := sums.Add(key, one); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := sums.Size(), int64(2*len(key)+96); got != want {
		t.Errorf("size of one fixed-size accumulator %d, want %d", got, want)
	}
}

// A stage over a text file of many splits encodes none of them, and a
// task's payload carries neither the stage nor the other splits: only its
// own split, so it does not grow with the file or the plan.
func TestTaskCarriesOnlyItsSplit(t *testing.T) {
	splits := make([]FileSplit, 5000)
	for i := range splits {
		splits[i] = FileSplit{Path: "/data/logs/2026/11/23/part-of-a-rather-long-file-name.txt", Start: int64(i) << 27, Size: 1 << 27}
	}
	st := &Stage{ID: 1, Final: 1, Output: Output{Kind: Count},
		Nodes: map[int]*Node{1: {ID: 1, Kind: TextFile, Splits: splits, NumPartitions: len(splits)}}}
	b, err := EncodeStage(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes[1].Splits) != len(splits) {
		t.Fatal("encoding the stage changed the driver's node")
	}
	task, err := EncodeTask(&Task{Partition: 4321, Splits: map[int]map[int]FileSplit{1: {4321: splits[4321]}}})
	if err != nil {
		t.Fatal(err)
	}
	// The split's path and offsets, and gob's description of the types
	// (about 450 bytes).
	if len(task) > 1024 {
		t.Errorf("a task of a 5,000-split file takes %d bytes; the stage or other splits are in it", len(task))
	}
	got, gotStage, err := DecodeTask(b, task)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(splits[4321], got.Splits[1][4321]); diff != "" {
		t.Errorf("the task's split (-want +got):\n%s", diff)
	}
	if gotStage.ID != st.ID || gotStage.Output.Kind != Count || len(gotStage.Nodes[1].Splits) != 0 {
		t.Errorf("decoded stage %d with output %v and %d splits, want stage %d, Count, no splits",
			gotStage.ID, gotStage.Output.Kind, len(gotStage.Nodes[1].Splits), st.ID)
	}
}
