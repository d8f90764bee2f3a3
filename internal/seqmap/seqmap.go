package seqmap

import (
	"cmp"
	"iter"
	"slices"
)

// Map holds values of type V under int64 keys. The zero Map is empty and
// ready to use. A pointer Get or Take returns stays valid until the next
// Put or Compact.
type Map[V any] struct {
	entries []entry[V]
	// live counts the entries not removed.
	live int
	// next is the entry after the one found last.
	next int
}

type entry[V any] struct {
	key     int64
	removed bool
	v       V
}

// Len is the number of keys held.
func (m *Map[V]) Len() int { return m.live }

// Slots is the number of entries, removed ones included, that the slice
// holds until the next compaction.
func (m *Map[V]) Slots() int { return len(m.entries) }

// Last is the largest key of the entries, removed ones included until a
// compaction drops them or the map empties, and whether there is one.
func (m *Map[V]) Last() (int64, bool) {
	if len(m.entries) == 0 {
		return 0, false
	}
	return m.entries[len(m.entries)-1].key, true
}

// Put sets key's value.
func (m *Map[V]) Put(key int64, v V) {
	if n := len(m.entries); n == 0 || m.entries[n-1].key < key {
		m.entries = append(m.entries, entry[V]{key: key, v: v})
		m.live++
		return
	}
	i, found := m.search(key)
	switch {
	case !found:
		m.entries = slices.Insert(m.entries, i, entry[V]{key: key, v: v})
		m.live++
		m.next = 0
	case m.entries[i].removed:
		m.entries[i] = entry[V]{key: key, v: v}
		m.live++
	default:
		m.entries[i].v = v
	}
}

// Get returns key's value, or false.
func (m *Map[V]) Get(key int64) (*V, bool) {
	i, ok := m.find(key)
	if !ok {
		return nil, false
	}
	return &m.entries[i].v, true
}

// Take removes key and returns its value, or false.
func (m *Map[V]) Take(key int64) (*V, bool) {
	i, ok := m.find(key)
	if !ok {
		return nil, false
	}
	e := &m.entries[i]
	e.removed = true
	m.live--
	m.next = i + 1
	v := &e.v
	switch {
	case m.live == 0:
		// Nothing is held: start again at the front; the value stays
		// readable until the next Put.
		m.entries, m.next = m.entries[:0], 0
	case len(m.entries) > 64 && m.live < len(m.entries)/4:
		// Mostly gaps: close them, after copying the value out of the
		// way.
		c := e.v
		v = &c
		m.Compact()
	}
	return v, true
}

// Compact drops the removed entries.
func (m *Map[V]) Compact() {
	m.entries = slices.DeleteFunc(m.entries, func(e entry[V]) bool { return e.removed })
	m.next = 0
}

// All yields the keys held and their values in increasing key order.
func (m *Map[V]) All() iter.Seq2[int64, *V] {
	return func(yield func(int64, *V) bool) {
		for i := range m.entries {
			if e := &m.entries[i]; !e.removed && !yield(e.key, &e.v) {
				return
			}
		}
	}
}

// Clear removes every key.
func (m *Map[V]) Clear() {
	clear(m.entries)
	m.entries, m.live, m.next = m.entries[:0], 0, 0
}

// find is the index of key's entry, if held.
func (m *Map[V]) find(key int64) (int, bool) {
	n := len(m.entries)
	if n == 0 || key > m.entries[n-1].key {
		return 0, false // a key not put yet, as a new task's
	}
	i := m.next
	if i >= n || m.entries[i].key != key {
		var found bool
		if i, found = m.search(key); !found {
			return 0, false
		}
	}
	if m.entries[i].removed {
		return 0, false
	}
	return i, true
}

func (m *Map[V]) search(key int64) (int, bool) {
	return slices.BinarySearchFunc(m.entries, key, func(e entry[V], key int64) int { return cmp.Compare(e.key, key) })
}
