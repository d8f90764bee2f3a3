package dataflow

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/drover-project/drover/internal/shuffle"
)

// partitioner returns the reduce partition of a record's key.
func partitioner(s *Shuffle) func(key []byte) int {
	n := s.NumPartitions
	switch s.Partitioner {
	case RangePartitioner:
		cmp := Comparator(s.Order)
		return func(key []byte) int {
			return sort.Search(len(s.Bounds), func(i int) bool { return cmp(key, s.Bounds[i]) <= 0 })
		}
	}
	return func(key []byte) int { return int(crc32.Checksum(key, castagnoli) % uint32(n)) }
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// writeShuffle partitions the records into the map output of this task,
// combining values by key first when the shuffle has a map-side
// aggregation, and returns the map status.
func (r *runner) writeShuffle(p Producer) ([]byte, error) {
	s := r.stage.Shuffles[r.stage.Output.Shuffle]
	if s == nil {
		return nil, fmt.Errorf("stage %d does not describe shuffle %d", r.stage.ID, r.stage.Output.Shuffle)
	}
	mgr := r.ft.Shuffle
	w, err := mgr.NewMapWriter(s.ID, r.task.Partition, r.ft.TaskID, s.NumPartitions, r.writeBuffer())
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	part := partitioner(s)
	if s.Partitioner == RoundRobin {
		// Each map task starts at a different partition, so small inputs
		// still spread out.
		next := r.task.Partition
		part = func([]byte) int { next = (next + 1) % s.NumPartitions; return next }
	}
	var tag []byte
	write := func(key, value []byte) error {
		if s.Tagged {
			tag = append(append(tag[:0], byte(s.Side)), value...)
			value = tag
		}
		r.m.ShuffleWriteRecords++
		return w.Write(part(key), key, value)
	}
	switch {
	case s.MapCombine != nil:
		c, err := NewCombiner(s.MapCombine, true)
		if err != nil {
			return nil, err
		}
		budget := r.task.MemoryBytes
		run, fused, err := r.fusedCombine(c, budget, write)
		if err != nil {
			return nil, err
		}
		if !fused {
			run = func() error {
				return forEachPair(p, func(key, value []byte) error {
					if err := c.Add(key, value); err != nil {
						return err
					}
					if c.Size() > budget {
						return c.Drain(write)
					}
					return nil
				})
			}
		}
		if err := run(); err != nil {
			return nil, err
		}
		if err := c.Drain(write); err != nil {
			return nil, err
		}
	case s.Partitioner == RoundRobin:
		if err := p(func(rec []byte) error { return write(nil, rec) }); err != nil {
			return nil, err
		}
	default:
		if err := forEachPair(p, write); err != nil {
			return nil, err
		}
	}
	st, err := w.Commit()
	if err != nil {
		return nil, err
	}
	ok = true
	if s.Lineage != "" {
		mgr.Keep(s.Lineage, st)
	}
	for _, n := range st.Sizes {
		r.m.ShuffleWriteBytes += n
	}
	return EncodeMapStatus(st)
}

// fusedCombine runs the stage's last function straight into the map-side
// combiner when both allow it: the pairs it produces are folded as Go
// values, never encoded and decoded in between.
func (r *runner) fusedCombine(c Combiner, budget int64, flush func(key, acc []byte) error) (func() error, bool, error) {
	n := r.stage.Nodes[r.stage.Final]
	limited, ok := c.(interface {
		SetLimit(int64, func(key, acc []byte) error)
	})
	if n == nil || n.Kind != Func || !ok {
		return nil, false, nil
	}
	f, err := lookup(n.Fn)
	if err != nil {
		return nil, false, err
	}
	ft := f.Fused[n.Mode]
	if ft == nil {
		return nil, false, nil
	}
	parent, err := r.input(n.Parent, r.task.Partition)
	if err != nil {
		return nil, false, err
	}
	run, ok := ft(r.ctx, r.ft, parent, c)
	if ok {
		limited.SetLimit(budget, flush)
	}
	return run, ok, nil
}

func (r *runner) writeBuffer() int64 {
	b := r.task.MemoryBytes / 2
	if b < 1<<20 {
		b = 1 << 20
	}
	return b
}

// EncodeMapStatus encodes a map task's result.
func EncodeMapStatus(s shuffle.MapStatus) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&s); err != nil {
		return nil, fmt.Errorf("encoding map status: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeMapStatus decodes a map task's result.
func DecodeMapStatus(b []byte) (shuffle.MapStatus, error) {
	var s shuffle.MapStatus
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return s, fmt.Errorf("decoding map status: %w", err)
	}
	return s, nil
}
