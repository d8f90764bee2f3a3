package seqmap

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAgainstAMap runs random operations, keys mostly increasing as task
// ids are, on a Map and a Go map, and compares them after each.
func TestAgainstAMap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inOrder  float64 // share of puts above every key so far
		takeRate float64
	}{
		{"in order, taken soon", 1, 0.5},
		{"mostly in order", 0.9, 0.5},
		{"any order", 0, 0.5},
		{"growing", 0.95, 0.3},
		{"draining", 0.95, 0.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 8))
			var m Map[string]
			want := map[int64]string{}
			var top int64
			for op := range 8000 {
				var key int64
				switch {
				case r.Float64() < tc.takeRate:
					// Take a key held (the oldest one most often) or not.
					if len(want) > 0 && r.IntN(10) > 0 {
						keys := slices.Sorted(maps.Keys(want))
						key = keys[min(len(keys)-1, r.IntN(1+len(keys)/8))]
					} else {
						key = r.Int64N(top + 2)
					}
					got, ok := m.Take(key)
					w, wok := want[key]
					if ok != wok || ok && *got != w {
						t.Fatalf("op %d: Take(%d) = %v, %v; want %q, %v", op, key, deref(got), ok, w, wok)
					}
					delete(want, key)
				default:
					if r.Float64() < tc.inOrder {
						top += 1 + r.Int64N(3)
						key = top
					} else {
						key = r.Int64N(top + 1)
					}
					v := string(rune('a' + op%26))
					m.Put(key, v)
					want[key] = v
				}
				if m.Len() != len(want) {
					t.Fatalf("op %d: Len = %d, want %d", op, m.Len(), len(want))
				}
				if op%97 == 0 {
					checkSame(t, &m, want)
				}
			}
			checkSame(t, &m, want)
		})
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func checkSame(t *testing.T, m *Map[string], want map[int64]string) {
	t.Helper()
	got := map[int64]string{}
	var order []int64
	for k, v := range m.All() {
		got[k] = *v
		order = append(order, k)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("All (-want +got):\n%s", diff)
	}
	if !slices.IsSorted(order) {
		t.Fatalf("All yields keys out of order: %v", order)
	}
	for k, w := range want {
		if v, ok := m.Get(k); !ok || *v != w {
			t.Fatalf("Get(%d) = %v, %v; want %q", k, deref(v), ok, w)
		}
	}
}

func TestTakenValueStaysReadable(t *testing.T) {
	var m Map[int]
	for k := range int64(200) {
		m.Put(k, int(k))
	}
	// Taking all but a few compacts on the way; every value read back
	// is the right one, and the slots shrink.
	for k := range int64(195) {
		v, ok := m.Take(k)
		if !ok || *v != int(k) {
			t.Fatalf("Take(%d) = %v, %v", k, v, ok)
		}
	}
	if m.Slots() >= 100 {
		t.Errorf("%d slots for %d keys: the gaps were not closed", m.Slots(), m.Len())
	}
	for k := int64(195); k < 200; k++ {
		v, ok := m.Take(k)
		if !ok || *v != int(k) {
			t.Fatalf("Take(%d) = %v, %v", k, v, ok)
		}
	}
	if m.Slots() != 0 || m.Len() != 0 {
		t.Errorf("emptied map: %d slots, %d keys", m.Slots(), m.Len())
	}
	if _, ok := m.Last(); ok {
		t.Error("an emptied map has a last key")
	}
	m.Put(5, 5)
	m.Put(3, 3)
	if last, ok := m.Last(); !ok || last != 5 {
		t.Errorf("Last = %d, %v; want 5", last, ok)
	}
	m.Clear()
	if m.Len() != 0 || m.Slots() != 0 {
		t.Errorf("after Clear: %d keys, %d slots", m.Len(), m.Slots())
	}
}

// BenchmarkStartEnd is a task's start and end, some hundreds running, as
// a Map and as a Go map.
func BenchmarkStartEnd(b *testing.B) {
	const running = 512
	b.Run("seqmap", func(b *testing.B) {
		var m Map[[3]int64]
		for k := range int64(running) {
			m.Put(k, [3]int64{k})
		}
		k := int64(running)
		for b.Loop() {
			m.Put(k, [3]int64{k})
			m.Take(k - running)
			k++
		}
	})
	b.Run("map", func(b *testing.B) {
		m := map[int64][3]int64{}
		for k := range int64(running) {
			m[k] = [3]int64{k}
		}
		k := int64(running)
		for b.Loop() {
			m[k] = [3]int64{k}
			delete(m, k-running)
			k++
		}
	})
}
