package dataflow

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/shuffle"
)

// shuffled builds the producer of a node that reads shuffle output: blocks
// of this reduce partition are fetched from the executors that wrote them
// (bounded by spark.reducer.maxSizeInFlight) and combined, grouped, joined
// or sorted in memory up to the task's budget, spilling to disk past it.
func (r *runner) shuffled(n *Node, p int) (Producer, error) {
	mgr := r.ft.Shuffle
	budget := r.task.MemoryBytes
	fetch := func(emit func(key, value []byte) error) error {
		for _, sid := range n.Shuffles {
			err := mgr.Fetch(r.ctx, sid, p, r.task.Blocks[sid][p], r.task.MaxInFlight, func(_ int, block []byte) error {
				r.m.ShuffleReadBytes += int64(len(block))
				return shuffle.ForEachRecord(block, func(key, value []byte) error {
					r.m.ShuffleReadRecords++
					return emit(key, value)
				})
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	// sorted sorts what src fetches by key with cmp (nil: bytewise),
	// spilling past the budget, and calls fn with each key and its values.
	sorted := func(src func(func(key, value []byte) error) error, cmp func(a, b []byte) int, fn func(key []byte, next func() ([]byte, bool)) error) error {
		s := shuffle.NewSorter(mgr.Dir(), budget, cmp)
		defer func() {
			r.m.SpillBytes += s.SpilledBytes()
			s.Close()
		}()
		if err := src(s.Add); err != nil {
			return err
		}
		return s.Groups(fn)
	}
	var buf []byte
	pair := func(emit func([]byte) error, key, value []byte) error {
		buf = codec.AppendPairBytes(buf[:0], key, value)
		return emit(buf)
	}
	switch n.Reduce {
	case Pass:
		return func(emit func([]byte) error) error {
			return fetch(func(_, value []byte) error { return emit(value) })
		}, nil
	case Combine:
		if n.Agg == nil {
			return nil, fmt.Errorf("node %d combines without an aggregation", n.ID)
		}
		return func(emit func([]byte) error) error {
			return r.combine(n.Agg, budget, fetch, func(key, acc []byte) error { return pair(emit, key, acc) })
		}, nil
	case Group:
		return func(emit func([]byte) error) error {
			var list []byte
			return sorted(fetch, nil, func(key []byte, next func() ([]byte, bool)) error {
				list = list[:0]
				count := 0
				for v, ok := next(); ok; v, ok = next() {
					if n.ByteValues {
						b, k := binary.Uvarint(v)
						if k <= 0 || b > 0xff {
							return fmt.Errorf("malformed byte value in group")
						}
						list = append(list, byte(b))
					} else {
						list = append(list, v...)
					}
					count++
				}
				buf = binary.AppendUvarint(codec.AppendPairBytes(buf[:0], key, nil), uint64(count))
				buf = append(buf, list...)
				return emit(buf)
			})
		}, nil
	case Join:
		return func(emit func([]byte) error) error {
			var left, right [][]byte
			var joined []byte
			return sorted(fetch, nil, func(key []byte, next func() ([]byte, bool)) error {
				left, right = left[:0], right[:0]
				for v, ok := next(); ok; v, ok = next() {
					if len(v) == 0 {
						return fmt.Errorf("join value without its side")
					}
					c := append([]byte(nil), v[1:]...)
					if v[0] == 0 {
						left = append(left, c)
					} else {
						right = append(right, c)
					}
				}
				for _, l := range left {
					if len(right) == 0 && n.LeftOuter {
						joined = append(append(append(joined[:0], l...), 0), n.ZeroRight...)
						if err := pair(emit, key, joined); err != nil {
							return err
						}
					}
					for _, rv := range right {
						joined = append(joined[:0], l...)
						if n.LeftOuter {
							joined = append(joined, 1)
						}
						if err := pair(emit, key, append(joined, rv...)); err != nil {
							return err
						}
					}
				}
				return nil
			})
		}, nil
	case Sort:
		if n.Sort == nil {
			return nil, fmt.Errorf("node %d sorts without an order", n.ID)
		}
		return func(emit func([]byte) error) error {
			// String keys are sorted as their bytes, without the length
			// that prefixes their encoding: the sorter then compares
			// 8-byte prefixes instead of decoding every key.
			raw := n.Sort.Kind == KeyString
			cmp, src := Comparator(n.Sort), fetch
			if raw {
				cmp = nil
				if n.Sort.Descending {
					cmp = func(a, b []byte) int { return bytes.Compare(b, a) }
				}
				src = func(add func(key, value []byte) error) error {
					return fetch(func(key, value []byte) error {
						k, _, err := codec.ReadBytesView(key)
						if err != nil {
							return err
						}
						return add(k, value)
					})
				}
			}
			var key []byte
			return sorted(src, cmp, func(k []byte, next func() ([]byte, bool)) error {
				if raw {
					key = codec.AppendBytes(key[:0], k)
					k = key
				}
				for v, ok := next(); ok; v, ok = next() {
					if err := pair(emit, k, v); err != nil {
						return err
					}
				}
				return nil
			})
		}, nil
	}
	return nil, fmt.Errorf("node %d has unknown reduce kind %d", n.ID, n.Reduce)
}

// combine merges accumulators by key in memory; past the budget it spills
// them as sorted runs and merges the runs key by key at the end, so the
// number of distinct keys is not bounded by memory.
func (r *runner) combine(agg *Aggregation, budget int64, fetch func(func(key, value []byte) error) error, out func(key, acc []byte) error) error {
	c, err := NewCombiner(agg, false)
	if err != nil {
		return err
	}
	var s *shuffle.Sorter
	err = fetch(func(key, value []byte) error {
		if err := c.Add(key, value); err != nil {
			return err
		}
		if c.Size() <= budget {
			return nil
		}
		if s == nil {
			s = shuffle.NewSorter(r.ft.Shuffle.Dir(), budget, nil)
		}
		if err := c.Drain(s.Add); err != nil {
			return err
		}
		spills.Add(1)
		return s.Spill()
	})
	if s != nil {
		defer func() {
			r.m.SpillBytes += s.SpilledBytes()
			s.Close()
		}()
	}
	if err != nil {
		return err
	}
	if s == nil {
		return c.Drain(out)
	}
	if err := c.Drain(s.Add); err != nil {
		return err
	}
	return s.Groups(func(key []byte, next func() ([]byte, bool)) error {
		for v, ok := next(); ok; v, ok = next() {
			if err := c.Add(key, v); err != nil {
				return err
			}
		}
		return c.Drain(out)
	})
}

var spills atomic.Int64

// Spills counts the times aggregations in this process spilled to disk.
func Spills() int64 { return spills.Load() }

// Comparator orders encoded keys by their Go values.
func Comparator(o *SortOrder) func(a, b []byte) int {
	var cmp func(a, b []byte) int
	switch o.Kind {
	case KeyString:
		cmp = func(a, b []byte) int {
			x, _, _ := codec.ReadBytesView(a)
			y, _, _ := codec.ReadBytesView(b)
			return bytes.Compare(x, y)
		}
	case KeyInt:
		cmp = func(a, b []byte) int {
			x, _ := binary.Varint(a)
			y, _ := binary.Varint(b)
			return compare(x, y)
		}
	case KeyUint:
		cmp = func(a, b []byte) int {
			x, _ := binary.Uvarint(a)
			y, _ := binary.Uvarint(b)
			return compare(x, y)
		}
	case KeyFloat64:
		cmp = func(a, b []byte) int {
			return compare(math.Float64frombits(binary.LittleEndian.Uint64(a)), math.Float64frombits(binary.LittleEndian.Uint64(b)))
		}
	case KeyFloat32:
		cmp = func(a, b []byte) int {
			return compare(math.Float32frombits(binary.LittleEndian.Uint32(a)), math.Float32frombits(binary.LittleEndian.Uint32(b)))
		}
	default:
		cmp = bytes.Compare
	}
	if o.Descending {
		return func(a, b []byte) int { return cmp(b, a) }
	}
	return cmp
}

// compare orders like cmp.Compare: NaN before every other float.
func compare[T int64 | uint64 | float64 | float32](x, y T) int { return cmp.Compare(x, y) }
