package shuffle

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// recordOverhead approximates the memory a buffered record costs beyond its
// key and value bytes.
const recordOverhead = 32

// sortEntry locates one buffered record in the arena. prefix holds the key's
// first 8 bytes, big-endian, when the sorter orders keys with bytes.Compare,
// so most comparisons touch no key bytes.
type sortEntry struct {
	prefix     uint64
	off        int
	klen, vlen uint32
}

// Sorter sorts records by key with a bounded memory budget, spilling sorted
// runs to disk, and merges them back grouped by key.
type Sorter struct {
	dir     string
	budget  int64
	compare func(a, b []byte) int
	custom  bool

	arena    []byte
	entries  []sortEntry
	buffered int64
	sorted   bool

	runs    []string
	spilled int64
	err     error
}

// NewSorter returns a sorter that spills its runs to dir (os.TempDir() when
// "") once it buffers more than memoryBudget bytes, ordering keys with compare
// (bytes.Compare when nil).
func NewSorter(dir string, memoryBudget int64, compare func(a, b []byte) int) *Sorter {
	if dir == "" {
		dir = os.TempDir()
	}
	s := &Sorter{dir: dir, budget: memoryBudget, compare: compare, custom: compare != nil}
	if compare == nil {
		s.compare = bytes.Compare
	}
	return s
}

// Add buffers a copy of one record. When the buffered bytes pass the memory
// budget it sorts the buffer and writes it to a run file.
func (s *Sorter) Add(key, value []byte) error {
	if s.err != nil {
		return s.err
	}
	off := len(s.arena)
	s.arena = append(append(s.arena, key...), value...)
	e := sortEntry{off: off, klen: uint32(len(key)), vlen: uint32(len(value))}
	if !s.custom {
		e.prefix = keyPrefix(key)
	}
	s.entries = append(s.entries, e)
	s.sorted = false
	s.buffered += int64(len(key)+len(value)) + recordOverhead
	if s.buffered > s.budget {
		return s.Spill()
	}
	return nil
}

func keyPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

func (s *Sorter) key(e *sortEntry) []byte {
	return s.arena[e.off : e.off+int(e.klen) : e.off+int(e.klen)]
}

func (s *Sorter) value(e *sortEntry) []byte {
	start := e.off + int(e.klen)
	return s.arena[start : start+int(e.vlen) : start+int(e.vlen)]
}

// sortBuffer sorts the buffered records by key; records with equal keys keep
// the order they were added in (their arena offsets increase).
func (s *Sorter) sortBuffer() {
	if s.sorted {
		return
	}
	if s.custom {
		slices.SortFunc(s.entries, func(a, b sortEntry) int {
			if c := s.compare(s.key(&a), s.key(&b)); c != 0 {
				return c
			}
			return cmp.Compare(a.off, b.off)
		})
	} else {
		slices.SortFunc(s.entries, func(a, b sortEntry) int {
			if a.prefix != b.prefix {
				return cmp.Compare(a.prefix, b.prefix)
			}
			if c := bytes.Compare(s.key(&a), s.key(&b)); c != 0 {
				return c
			}
			return cmp.Compare(a.off, b.off)
		})
	}
	s.sorted = true
}

// Spill writes the buffered records as a sorted run now. It does nothing when
// the buffer is empty.
func (s *Sorter) Spill() error {
	if s.err != nil {
		return s.err
	}
	if len(s.entries) == 0 {
		return nil
	}
	if err := s.spill(); err != nil {
		s.err = err
		return err
	}
	return nil
}

func (s *Sorter) spill() error {
	s.sortBuffer()
	f, err := os.CreateTemp(s.dir, "drover-sort-run-*")
	if err != nil {
		return fmt.Errorf("sorter: create run: %w", err)
	}
	s.runs = append(s.runs, f.Name())
	w := bufio.NewWriterSize(f, 256<<10)
	var hdr [binary.MaxVarintLen64]byte
	var n int64
	for i := range s.entries {
		e := &s.entries[i]
		k := binary.AppendUvarint(hdr[:0], uint64(e.klen))
		w.Write(k)
		w.Write(s.key(e))
		n += int64(len(k)) + int64(e.klen)
		v := binary.AppendUvarint(hdr[:0], uint64(e.vlen))
		w.Write(v)
		w.Write(s.value(e))
		n += int64(len(v)) + int64(e.vlen)
	}
	err = w.Flush() // bufio keeps the first write error
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sorter: write run: %w", err)
	}
	s.spilled += n
	s.arena = s.arena[:0]
	s.entries = s.entries[:0]
	s.buffered = 0
	return nil
}

// Spills returns the number of runs written so far.
func (s *Sorter) Spills() int { return len(s.runs) }

// SpilledBytes returns the bytes of the runs written so far.
func (s *Sorter) SpilledBytes() int64 { return s.spilled }

// Groups merges the runs and the buffer in key order and calls fn once per
// distinct key with an iterator over the key's values: records with equal
// keys come in the order they were added. Values are read from the runs as
// the iterator advances, so a key may have more data than the memory budget.
// The key and value slices are valid only until the next call of next or fn;
// values fn does not consume are skipped. Groups returns fn's first error.
func (s *Sorter) Groups(fn func(key []byte, next func() (value []byte, ok bool)) error) error {
	if s.err != nil {
		return s.err
	}
	s.sortBuffer()
	bufSize := 64 << 10
	if len(s.runs) > 0 {
		bufSize = int(min(max(s.budget/int64(len(s.runs)+1), 16<<10), 1<<20))
	}
	h := &mergeHeap{compare: s.compare}
	defer func() {
		for _, it := range h.all {
			it.src.close()
		}
	}()
	for i, path := range s.runs {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("sorter: open run: %w", err)
		}
		h.all = append(h.all, &mergeItem{src: &runSource{f: f, r: bufio.NewReaderSize(f, bufSize)}, order: i})
	}
	h.all = append(h.all, &mergeItem{src: &memSource{s: s}, order: len(s.runs)})
	for _, it := range h.all {
		ok, err := it.advance()
		if err != nil {
			return err
		}
		if ok {
			h.items = append(h.items, it)
		}
	}
	heap.Init(h)

	var (
		groupKey []byte
		pending  bool
		iterErr  error
	)
	next := func() ([]byte, bool) {
		if iterErr != nil {
			return nil, false
		}
		if pending {
			pending = false
			ok, err := h.items[0].advance()
			if err != nil {
				iterErr = err
				return nil, false
			}
			if ok {
				heap.Fix(h, 0)
			} else {
				heap.Pop(h)
			}
		}
		if len(h.items) == 0 || s.compare(h.items[0].key, groupKey) != 0 {
			return nil, false
		}
		pending = true
		return h.items[0].value, true
	}
	for len(h.items) > 0 {
		groupKey = append(groupKey[:0], h.items[0].key...)
		if err := fn(groupKey, next); err != nil {
			return err
		}
		for {
			if _, ok := next(); !ok {
				break
			}
		}
		if iterErr != nil {
			return iterErr
		}
	}
	return nil
}

// Close removes the run files and drops the buffer. It is safe to call more
// than once.
func (s *Sorter) Close() error {
	var errs []error
	for _, path := range s.runs {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("sorter: remove run: %w", err))
		}
	}
	s.runs = nil
	s.arena, s.entries, s.buffered = nil, nil, 0
	if s.err == nil {
		s.err = errors.New("sorter is closed")
	}
	return errors.Join(errs...)
}

type mergeSource interface {
	// next returns the next record; the slices are valid until the next call.
	next() (key, value []byte, ok bool, err error)
	close()
}

type memSource struct {
	s *Sorter
	i int
}

func (m *memSource) next() ([]byte, []byte, bool, error) {
	if m.i >= len(m.s.entries) {
		return nil, nil, false, nil
	}
	e := &m.s.entries[m.i]
	m.i++
	return m.s.key(e), m.s.value(e), true, nil
}

func (*memSource) close() {}

type runSource struct {
	f          *os.File
	r          *bufio.Reader
	key, value []byte
}

func (r *runSource) next() ([]byte, []byte, bool, error) {
	n, err := binary.ReadUvarint(r.r)
	if err == io.EOF {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, r.fail(err)
	}
	if r.key, err = readInto(r.r, r.key, n); err != nil {
		return nil, nil, false, r.fail(err)
	}
	if n, err = binary.ReadUvarint(r.r); err != nil {
		return nil, nil, false, r.fail(err)
	}
	if r.value, err = readInto(r.r, r.value, n); err != nil {
		return nil, nil, false, r.fail(err)
	}
	return r.key, r.value, true, nil
}

func (r *runSource) fail(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("sorter: read run %s: %w", r.f.Name(), err)
}

func (r *runSource) close() { r.f.Close() }

// readInto reads n bytes into buf, reusing its storage.
func readInto(r io.Reader, buf []byte, n uint64) ([]byte, error) {
	if n > 1<<40 {
		return buf, errMalformed
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n, max(n, 2*uint64(cap(buf))))
	}
	buf = buf[:n]
	_, err := io.ReadFull(r, buf)
	return buf, err
}

type mergeItem struct {
	src        mergeSource
	key, value []byte
	order      int // ties go to the earlier run: values keep their insertion order
}

func (it *mergeItem) advance() (bool, error) {
	k, v, ok, err := it.src.next()
	it.key, it.value = k, v
	return ok, err
}

type mergeHeap struct {
	items   []*mergeItem
	all     []*mergeItem
	compare func(a, b []byte) int
}

func (h *mergeHeap) Len() int { return len(h.items) }
func (h *mergeHeap) Less(i, j int) bool {
	if c := h.compare(h.items[i].key, h.items[j].key); c != 0 {
		return c < 0
	}
	return h.items[i].order < h.items[j].order
}
func (h *mergeHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap) Push(x any)    { h.items = append(h.items, x.(*mergeItem)) }
func (h *mergeHeap) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}
