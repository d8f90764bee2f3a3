package shuffle

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/connectivity"
)

func newTestManager(t testing.TB, id executorid.ID, addr string) *Manager {
	t.Helper()
	m, err := NewManager(ManagerOptions{Dir: t.TempDir(), ExecutorID: id, Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// writeMap writes a map output of random records and returns what each
// partition holds.
func writeMap(t testing.TB, m *Manager, shuffleID, mapID int, taskID int64, parts, records int, bufferBytes int64, rng *rand.Rand) (MapStatus, [][]kv) {
	t.Helper()
	w, err := m.NewMapWriter(shuffleID, mapID, taskID, parts, bufferBytes)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]kv, parts)
	for i := range records {
		p := rng.IntN(parts)
		r := kv{fmt.Sprintf("m%d-k%d", mapID, i), string(make([]byte, rng.IntN(40)))}
		want[p] = append(want[p], r)
		if err := w.Write(p, []byte(r.K), []byte(r.V)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return st, want
}

func parseBlock(t testing.TB, b []byte) []kv {
	t.Helper()
	var got []kv
	if err := ForEachRecord(b, func(k, v []byte) error {
		got = append(got, kv{string(k), string(v)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestMapWriterSegments(t *testing.T) {
	tests := []struct {
		name        string
		parts       int
		records     int
		bufferBytes int64
		minSegments int
	}{
		{"one partition", 1, 500, 100, 50},
		{"tiny buffer", 7, 2000, 64, 100},
		{"more partitions than records", 50, 20, 1 << 20, 0},
		{"default buffer", 3, 1000, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestManager(t, execA, "127.0.0.1:1")
			st, want := writeMap(t, m, 3, 4, 99, tt.parts, tt.records, tt.bufferBytes, rand.New(rand.NewPCG(1, 2)))
			if st.ShuffleID != 3 || st.MapID != 4 || st.TaskID != 99 || st.ExecutorID != execA || st.Address != "127.0.0.1:1" {
				t.Errorf("status = %+v", st)
			}
			if len(st.Sizes) != tt.parts {
				t.Fatalf("%d sizes, want %d", len(st.Sizes), tt.parts)
			}
			segments := 0
			for p := range tt.parts {
				b, err := m.readLocalBlock(3, 4, 99, p)
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(b)) != st.Sizes[p] {
					t.Errorf("partition %d: %d bytes, status says %d", p, len(b), st.Sizes[p])
				}
				if diff := cmp.Diff(want[p], parseBlock(t, b)); diff != "" {
					t.Errorf("partition %d (-want +got):\n%s", p, diff)
				}
				bf, err := m.openBlock(3, 4, 99, p)
				if err != nil {
					t.Fatal(err)
				}
				segments += len(bf.segs)
				bf.Close()
			}
			if segments < tt.minSegments {
				t.Errorf("%d segments, want at least %d", segments, tt.minSegments)
			}
			if _, err := m.readLocalBlock(3, 4, 99, tt.parts); err == nil {
				t.Error("partition out of range: no error")
			}
			if _, err := m.readLocalBlock(3, 4, 100, 0); !os.IsNotExist(err) {
				t.Errorf("other task attempt: err = %v, want not exist", err)
			}
		})
	}
}

func TestMapWriterErrors(t *testing.T) {
	m := newTestManager(t, execA, "")
	if _, err := m.NewMapWriter(0, 0, 0, 0, 0); err == nil {
		t.Error("no partitions: no error")
	}
	w, err := m.NewMapWriter(0, 0, 0, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{-1, 2} {
		if err := w.Write(p, nil, nil); err == nil {
			t.Errorf("write to partition %d: no error", p)
		}
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(0, nil, nil); err == nil {
		t.Error("write after commit: no error")
	}
	if _, err := w.Commit(); err == nil {
		t.Error("second commit: no error")
	}
	w.Abort() // after commit: keeps the output
	if _, err := m.readLocalBlock(0, 0, 0, 1); err != nil {
		t.Errorf("abort after commit removed the output: %v", err)
	}
}

func dirEntries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestMapWriterAbort(t *testing.T) {
	m := newTestManager(t, execA, "")
	w, err := m.NewMapWriter(1, 2, 3, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := w.Write(i%4, []byte("key"), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	w.Abort()
	w.Abort()
	if names := dirEntries(t, m.Dir()); len(names) != 0 {
		t.Errorf("files left after abort: %v", names)
	}
	if _, err := w.Commit(); err == nil {
		t.Error("commit after abort: no error")
	}
	if names := dirEntries(t, m.Dir()); len(names) != 0 {
		t.Errorf("files left after commit of an aborted writer: %v", names)
	}
}

func TestManagerClose(t *testing.T) {
	parent := t.TempDir()
	m, err := NewManager(ManagerOptions{Dir: filepath.Join(parent, "local"), ExecutorID: execA})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(m.Dir()) != filepath.Join(parent, "local") {
		t.Errorf("dir %s not under the local dir", m.Dir())
	}
	m2, err := NewManager(ManagerOptions{Dir: filepath.Join(parent, "local"), ExecutorID: execB})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if m.Dir() == m2.Dir() {
		t.Errorf("two managers share %s", m.Dir())
	}
	writeMap(t, m, 0, 0, 0, 3, 100, 50, rand.New(rand.NewPCG(1, 1)))
	pc, err := m.peers.acquire(t.Context(), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.Dir()); !os.IsNotExist(err) {
		t.Errorf("dir after close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if st := pc.cc.GetState(); st != connectivity.Shutdown {
		t.Errorf("connection in use after close: %v, want %v", st, connectivity.Shutdown)
	}
	m.peers.release(pc)
	if _, err := m.peers.acquire(t.Context(), "127.0.0.1:1"); !errors.Is(err, errManagerClosed) {
		t.Errorf("acquire after close: %v, want %v", err, errManagerClosed)
	}
}

func TestRemoveShuffles(t *testing.T) {
	m := newTestManager(t, execA, "127.0.0.1:1")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sid := range []int{1, 2, 10} {
		for mapID := range 2 {
			writeMap(t, m, sid, mapID, int64(100*sid+mapID), 3, 20, 1<<20, rng)
		}
	}
	// A write in progress leaves a temporary file of its shuffle.
	if _, err := m.NewMapWriter(1, 5, 999, 3, 1<<20); err != nil {
		t.Fatal(err)
	}
	removed, err := m.RemoveShuffles(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 9 { // two maps × (data + index) for 1 and 2, and the temporary file
		t.Errorf("removed %d files, want 9", removed)
	}
	entries, err := os.ReadDir(m.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	// Shuffle 10 shares the digit 1 with shuffle 1 and must stay.
	want := []string{"shuffle_10_0_1000.data", "shuffle_10_0_1000.index", "shuffle_10_1_1001.data", "shuffle_10_1_1001.index"}
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("files left (-want +got):\n%s", diff)
	}
	if n, err := m.RemoveShuffles(1); err != nil || n != 0 {
		t.Errorf("removing again: %d files, %v; want 0, nil", n, err)
	}
}

// Executors of the tests.
const (
	execA    executorid.ID = 1
	execB    executorid.ID = 2
	execC    executorid.ID = 3
	execGone executorid.ID = 99
)

// TestHeldOutputs: the outputs kept with a lineage are listed until their
// shuffle is removed; those without one are not kept.
func TestHeldOutputs(t *testing.T) {
	m := newTestManager(t, execA, "127.0.0.1:1")
	rng := rand.New(rand.NewPCG(3, 4))
	var want []HeldOutput
	for _, sid := range []int{2, 1, 10} {
		for mapID := range 2 {
			st, _ := writeMap(t, m, sid, mapID, int64(100*sid+mapID), 3, 20, 1<<20, rng)
			lineage := fmt.Sprintf("lineage-%d", sid)
			if sid == 10 && mapID == 1 {
				lineage = "" // a shuffle of a driver that names none
			}
			m.Keep(lineage, st)
			if sid == 10 && lineage != "" {
				want = append(want, HeldOutput{Lineage: lineage, Status: st})
			}
		}
	}
	all := m.Held()
	if len(all) != 5 {
		t.Errorf("%d outputs held, want 5: %v", len(all), all)
	}
	for i := 1; i < len(all); i++ {
		if a, b := all[i-1].Status, all[i].Status; a.ShuffleID > b.ShuffleID || a.ShuffleID == b.ShuffleID && a.MapID > b.MapID {
			t.Errorf("outputs out of order: %v before %v", a, b)
		}
	}
	if _, err := m.RemoveShuffles(1, 2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, m.Held()); diff != "" {
		t.Errorf("held after removing shuffles 1 and 2 (-want +got):\n%s", diff)
	}
}
