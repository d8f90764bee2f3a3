package lineage

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/dataflow"
)

// graph is a plan held in maps, as the DAG holds it.
type graph struct {
	nodes    map[int]*dataflow.Node
	shuffles map[int]*dataflow.Shuffle
	data     map[int][][]byte
}

func (g *graph) Node(id int) *dataflow.Node       { return g.nodes[id] }
func (g *graph) Shuffle(id int) *dataflow.Shuffle { return g.shuffles[id] }
func (g *graph) Data(id int) [][]byte             { return g.data[id] }

// wordCount is read → flatMap → reduceByKey → sortByKey, numbered from
// base, as a program run again may number it.
func wordCount(base int) *graph {
	read, words, counts, sorted := base+1, base+2, base+4, base+6
	bycount, byword := base+3, base+5
	return &graph{
		nodes: map[int]*dataflow.Node{
			read: {ID: read, Kind: dataflow.TextFile, NumPartitions: 2, Splits: []dataflow.FileSplit{
				{Path: "s3://in/a.txt", Start: 0, Size: 100, FileSize: 200, ETag: `"e1"`},
				{Path: "s3://in/a.txt", Start: 100, Size: 100, FileSize: 200, ETag: `"e1"`}}},
			words:  {ID: words, Kind: dataflow.Func, Parent: read, NumPartitions: 2, Fn: "main.split", Mode: dataflow.ModeFlatMap},
			counts: {ID: counts, Kind: dataflow.Shuffled, NumPartitions: 3, Shuffles: []int{bycount}, Reduce: dataflow.Combine, Agg: &dataflow.Aggregation{Comb: "main.sum"}},
			sorted: {ID: sorted, Kind: dataflow.Shuffled, NumPartitions: 2, Shuffles: []int{byword}, Reduce: dataflow.Sort, Sort: &dataflow.SortOrder{Kind: dataflow.KeyString}},
		},
		shuffles: map[int]*dataflow.Shuffle{
			bycount: {ID: bycount, Parent: words, NumPartitions: 3, Partitioner: dataflow.HashPartitioner, MapCombine: &dataflow.Aggregation{Comb: "main.sum"}},
			byword: {ID: byword, Parent: counts, NumPartitions: 2, Partitioner: dataflow.RangePartitioner,
				Bounds: [][]byte{[]byte("m")}, Order: &dataflow.SortOrder{Kind: dataflow.KeyString}},
		},
	}
}

func fingerprints(t *testing.T, g *graph, base int) [2]string {
	t.Helper()
	h := NewHasher(g)
	n, err := h.Node(base + 6)
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.Shuffle(base + 3)
	if err != nil {
		t.Fatal(err)
	}
	return [2]string{n.String(), s.String()}
}

func TestSameLineageSameFingerprintWhateverTheIDs(t *testing.T) {
	again := wordCount(40)
	// The fingerprint the driver stamps on a shuffle is not part of it.
	again.shuffles[43].Lineage = "stamped"
	if diff := cmp.Diff(fingerprints(t, wordCount(0), 0), fingerprints(t, again, 40)); diff != "" {
		t.Errorf("a program numbering its datasets anew changed the fingerprints (-first +second):\n%s", diff)
	}
}

func TestAnyChangeInLineageChangesTheFingerprint(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(g *graph)
		// shuffle is set when the first shuffle (upstream of the change
		// or not) keeps its fingerprint: only what reads the change moves.
		shuffleKept bool
	}{
		{name: "input rewritten (ETag)", edit: func(g *graph) { g.nodes[1].Splits[1].ETag = `"e2"` }},
		{name: "input grew", edit: func(g *graph) { g.nodes[1].Splits[1].FileSize = 300 }},
		{name: "local input touched", edit: func(g *graph) { g.nodes[1].Splits[0].ModTime = 1 }},
		{name: "another function", edit: func(g *graph) { g.nodes[2].Fn = "main.splitLower" }},
		{name: "another mode", edit: func(g *graph) { g.nodes[2].Mode = dataflow.ModeMap }},
		{name: "more partitions", edit: func(g *graph) { g.shuffles[3].NumPartitions = 4 }},
		{name: "another combiner", edit: func(g *graph) { g.shuffles[3].MapCombine.Comb = "main.max" }},
		{name: "other range bounds", edit: func(g *graph) { g.shuffles[5].Bounds[0] = []byte("n") }, shuffleKept: true},
		{name: "descending sort", edit: func(g *graph) { g.nodes[6].Sort.Descending = true }, shuffleKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fingerprints(t, wordCount(0), 0)
			g := wordCount(0)
			tc.edit(g)
			after := fingerprints(t, g, 0)
			if before[0] == after[0] {
				t.Errorf("the sorted dataset kept its fingerprint %s", after[0])
			}
			if kept := before[1] == after[1]; kept != tc.shuffleKept {
				t.Errorf("the first shuffle's fingerprint kept = %v, want %v", kept, tc.shuffleKept)
			}
		})
	}
}

func TestParallelizedRecordsAreHashed(t *testing.T) {
	fp := func(parts ...string) Fingerprint {
		g := &graph{nodes: map[int]*dataflow.Node{1: {ID: 1, Kind: dataflow.Parallelize, NumPartitions: len(parts)}},
			data: map[int][][]byte{1: {}}}
		for _, p := range parts {
			g.data[1] = append(g.data[1], []byte(p))
		}
		f, err := NewHasher(g).Node(1)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if fp("ab", "") == fp("a", "b") {
		t.Error("records split differently into partitions have one fingerprint")
	}
	if a, b := fp("ab", ""), fp("ab", ""); a != b {
		t.Error("the same records have two fingerprints")
	}
}

func TestUnknownIDsAreErrors(t *testing.T) {
	g := wordCount(0)
	delete(g.shuffles, 3)
	h := NewHasher(g)
	if _, err := h.Node(4); err == nil {
		t.Error("a dataset reading a missing shuffle got a fingerprint")
	}
	if _, err := h.Shuffle(9); err == nil {
		t.Error("a missing shuffle got a fingerprint")
	}
}

func TestFingerprintText(t *testing.T) {
	f, err := NewHasher(wordCount(0)).Node(6)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	var back Fingerprint
	if err := back.UnmarshalText(b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "zz", f.String()[:10]} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted a bad fingerprint", bad)
		}
	}
}

// TestOutputFingerprint: where an output goes is not part of it; what is
// written and how is.
func TestOutputFingerprint(t *testing.T) {
	node, err := NewHasher(wordCount(0)).Node(6)
	if err != nil {
		t.Fatal(err)
	}
	fp := func(n Fingerprint, out dataflow.Output) Fingerprint {
		f, err := Output(n, out)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	text := dataflow.Output{Kind: dataflow.SaveText, Text: true, Ext: ".txt", Dir: "/tmp/a"}
	moved := text
	moved.Dir = "s3://b/c"
	if fp(node, text) != fp(node, moved) {
		t.Error("the output's directory changed its fingerprint")
	}
	json := text
	json.Format, json.Ext = dataflow.JSONLines, ".json"
	if fp(node, text) == fp(node, json) {
		t.Error("another format kept the fingerprint")
	}
	other, err := NewHasher(wordCount(0)).Node(4)
	if err != nil {
		t.Fatal(err)
	}
	if fp(node, text) == fp(other, text) {
		t.Error("another dataset kept the fingerprint")
	}
}
