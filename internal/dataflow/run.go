package dataflow

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/funcs"
)

// TaskFunc is the name of the task function that runs dataset stages.
const TaskFunc = "drover.stage"

func init() {
	if err := funcs.Register(TaskFunc, RunTask); err != nil {
		panic(err)
	}
}

// errStop ends a producer early (Take).
var errStop = errors.New("stop")

// RunTask runs one task of a stage: it builds the partition's pipeline of
// producers, from the sources or shuffle reads to the output, and runs it.
func RunTask(ctx context.Context, ft funcs.Task, payload []byte) ([]byte, error) {
	t, st, err := decodeTask(payload)
	if err != nil {
		return nil, err
	}
	r := &runner{ctx: ctx, ft: ft, task: t, stage: st}
	if ft.Shuffle == nil && needsShuffle(st) {
		return nil, errors.New("this executor has no shuffle service")
	}
	p, err := r.build(st.Final, t.Partition)
	if err != nil {
		return nil, err
	}
	return r.output(p)
}

func needsShuffle(st *Stage) bool {
	if st.Output.Kind == WriteShuffle {
		return true
	}
	for _, n := range st.Nodes {
		if n.Kind == Shuffled {
			return true
		}
	}
	return false
}

type runner struct {
	ctx   context.Context
	ft    funcs.Task
	task  *Task
	stage *Stage
}

func (r *runner) node(id int) (*Node, error) {
	n := r.stage.Nodes[id]
	if n == nil {
		return nil, fmt.Errorf("stage %d has no node %d", r.stage.ID, id)
	}
	return n, nil
}

// build returns the producer of partition p of node id.
func (r *runner) build(id, p int) (Producer, error) {
	n, err := r.node(id)
	if err != nil {
		return nil, err
	}
	switch n.Kind {
	case Parallelize:
		data := r.task.Data[p]
		return func(emit func([]byte) error) error { return forEachFramed(data, emit) }, nil
	case Range:
		return rangeProducer(n, p), nil
	case TextFile:
		in, err := r.input(id, p)
		return in.Records, err
	case Func:
		in, err := r.input(n.Parent, p)
		if err != nil {
			return nil, err
		}
		t, err := transform(n.Fn, n.Mode)
		if err != nil {
			return nil, err
		}
		return t(r.ctx, r.ft, in), nil
	case Coalesce:
		if p >= len(n.Groups) {
			return nil, fmt.Errorf("coalesce node %d has no partition %d", id, p)
		}
		parents := make([]Producer, 0, len(n.Groups[p]))
		for _, q := range n.Groups[p] {
			pp, err := r.build(n.Parent, q)
			if err != nil {
				return nil, err
			}
			parents = append(parents, pp)
		}
		return func(emit func([]byte) error) error {
			for _, pp := range parents {
				if err := pp(emit); err != nil {
					return err
				}
			}
			return nil
		}, nil
	case Shuffled:
		return r.shuffled(n, p)
	}
	return nil, fmt.Errorf("node %d has unknown kind %d", id, n.Kind)
}

// input is what a step reading partition p of node id gets.
func (r *runner) input(id, p int) (Input, error) {
	n, err := r.node(id)
	if err != nil {
		return Input{}, err
	}
	if n.Kind != TextFile {
		parent, err := r.build(id, p)
		return Input{Records: parent}, err
	}
	split, ok := r.task.Splits[id][p]
	if !ok {
		return Input{}, fmt.Errorf("text file node %d: the task carries no split %d", id, p)
	}
	lines := textLines(r.ctx, split)
	return Input{Lines: lines, Records: func(emit func([]byte) error) error {
		var rec []byte
		return lines(func(line string) error {
			rec = codec.AppendString(rec[:0], line)
			return emit(rec)
		})
	}}, nil
}

func rangeProducer(n *Node, p int) Producer {
	return func(emit func([]byte) error) error {
		var buf [binary.MaxVarintLen64]byte
		for v := range rangeValues(n.Start, n.End, n.Step, p, n.NumPartitions) {
			if err := emit(binary.AppendVarint(buf[:0], v)); err != nil {
				return err
			}
		}
		return nil
	}
}

// rangeValues is partition p of parts of start, start+step, … up to end
// (excluded). The arithmetic is unsigned and 128-bit where it must be, so
// ranges that span most of int64 neither overflow nor lose values.
func rangeValues(start, end, step int64, p, parts int) iter.Seq[int64] {
	return func(yield func(int64) bool) {
		var span, stride uint64
		switch {
		case step > 0 && end > start:
			span, stride = uint64(end)-uint64(start), uint64(step)
		case step < 0 && end < start:
			span, stride = uint64(start)-uint64(end), -uint64(step)
		default:
			return
		}
		count := span / stride
		if span%stride != 0 {
			count++
		}
		lo, hi := share(count, p, parts), share(count, p+1, parts)
		for i := lo; i < hi; i++ {
			// Two's complement: the wrapped sum is the value, which lies
			// between start and end.
			if !yield(int64(uint64(start) + i*uint64(step))) {
				return
			}
		}
	}
}

// share is count×p/parts without overflow.
func share(count uint64, p, parts int) uint64 {
	hi, lo := bits.Mul64(count, uint64(p))
	q, _ := bits.Div64(hi, lo, uint64(parts))
	return q
}

// textLines emits the lines that start inside the split, without their
// line terminators (\n or \r\n). A split after the first skips the partial
// line it starts in; the last line is read past the split's end. The file
// is read in fresh chunks that are never written again, so the lines are
// strings over them, without a copy or an allocation per line.
func textLines(ctx context.Context, s FileSplit) func(emit func(string) error) error {
	return func(emit func(string) error) error {
		f, err := os.Open(s.Path)
		if err != nil {
			return fmt.Errorf("reading text file: %w", err)
		}
		defer f.Close()
		pos := s.Start // file offset of the next byte to read
		skip := false
		if pos > 0 {
			pos-- // a line starts at s.Start when the byte before it ends one
			skip = true
		}
		end := s.Start + s.Size
		chunkSize := int(min(max(s.Size, 64<<10), 1<<20))
		var tail []byte  // the start of a line cut by the end of the last chunk
		lineStart := pos // file offset of tail[0]
		for n := 0; ; n++ {
			if n&15 == 0 && ctx.Err() != nil {
				return context.Cause(ctx)
			}
			chunk := make([]byte, max(chunkSize, 2*len(tail)))
			copy(chunk, tail)
			read, err := f.ReadAt(chunk[len(tail):], pos)
			if err != nil && err != io.EOF {
				return fmt.Errorf("reading %s: %w", s.Path, err)
			}
			pos += int64(read)
			data := chunk[:len(tail)+read]
			text := unsafe.String(unsafe.SliceData(data), len(data))
			for {
				i := strings.IndexByte(text, '\n')
				if i < 0 {
					break
				}
				line := text[:i]
				text = text[i+1:]
				if skip {
					skip = false
				} else {
					if lineStart >= end {
						return nil
					}
					if err := emit(trimCR(line)); err != nil {
						return err
					}
				}
				lineStart += int64(i + 1)
			}
			tail = []byte(text)
			if read == 0 || err == io.EOF {
				if len(text) > 0 && !skip && lineStart < end {
					return emit(trimCR(text)) // a last line without a terminator
				}
				return nil
			}
		}
	}
}

func trimCR(s string) string {
	if n := len(s); n > 0 && s[n-1] == '\r' {
		return s[:n-1]
	}
	return s
}

// AppendFramed appends a record with its length, for blocks of records
// whose type the reader does not know.
func AppendFramed(b, rec []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(rec)))
	return append(b, rec...)
}

// ForEachFramed calls fn with each record of a block of framed records.
func ForEachFramed(b []byte, fn func(rec []byte) error) error { return forEachFramed(b, fn) }

func forEachFramed(b []byte, fn func(rec []byte) error) error {
	for len(b) > 0 {
		rec, rest, err := codec.ReadBytesView(b)
		if err != nil {
			return fmt.Errorf("malformed record block: %w", err)
		}
		if err := fn(rec); err != nil {
			return err
		}
		b = rest
	}
	return nil
}

// output runs the pipeline into the stage's output.
func (r *runner) output(p Producer) ([]byte, error) {
	o := r.stage.Output
	switch o.Kind {
	case WriteShuffle:
		return r.writeShuffle(p)
	case Collect:
		var out []byte
		n := 0
		err := p(func(rec []byte) error {
			out = AppendFramed(out, rec)
			if n++; o.Limit > 0 && n >= o.Limit {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			return nil, err
		}
		return out, nil
	case Count:
		var n int64
		if err := p(func([]byte) error { n++; return nil }); err != nil {
			return nil, err
		}
		return binary.AppendVarint(nil, n), nil
	case ReduceAll, Foreach:
		f, err := lookup(o.Fn)
		if err != nil {
			return nil, err
		}
		var sink Sink
		if o.Kind == ReduceAll && f.Reduce != nil {
			sink = f.Reduce(r.ctx)
		} else if o.Kind == Foreach && f.Foreach != nil {
			sink = f.Foreach(r.ctx, r.ft)
		}
		if sink == nil {
			return nil, fmt.Errorf("function %q cannot be used for this action", o.Fn)
		}
		if err := p(sink.Add); err != nil {
			return nil, err
		}
		return sink.Result()
	case SaveText:
		return r.saveText(p)
	case SampleKeys:
		return sampleKeys(p, o.SampleSize, int64(r.task.Partition))
	}
	return nil, fmt.Errorf("unknown output kind %d", o.Kind)
}

// saveText writes the partition as a file in the job's temporary directory,
// named for the task attempt, and returns its name; the driver commits the
// files of the successful attempts once every partition is written.
func (r *runner) saveText(p Producer) ([]byte, error) {
	o := r.stage.Output
	name := fmt.Sprintf("part-%05d-attempt-%d", r.task.Partition, r.ft.TaskID)
	path := filepath.Join(o.Dir, name)
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("saving partition %d: %w", r.task.Partition, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	err = p(func(rec []byte) error {
		var err error
		if o.Text {
			line, _, err = codec.ReadBytesView(rec)
		} else {
			line, _, err = o.Schema.Format(line[:0], rec)
		}
		if err != nil {
			return fmt.Errorf("formatting record: %w", err)
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		return w.WriteByte('\n')
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("saving partition %d: %w", r.task.Partition, err)
	}
	return []byte(name), nil
}

// sampleKeys keeps a uniform sample of the partition's keys (reservoir
// sampling) for a range partitioner, with the partition's record count.
func sampleKeys(p Producer, size int, seed int64) ([]byte, error) {
	var keys [][]byte
	var n int64
	rnd := seed*6364136223846793005 + 1442695040888963407
	err := p(func(rec []byte) error {
		key, _, err := codec.SplitPair(rec)
		if err != nil {
			return err
		}
		n++
		if len(keys) < size {
			keys = append(keys, append([]byte(nil), key...))
			return nil
		}
		rnd = rnd*6364136223846793005 + 1442695040888963407
		if j := uint64(rnd>>1) % uint64(n); j < uint64(size) {
			keys[j] = append(keys[j][:0], key...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := binary.AppendVarint(nil, n)
	for _, k := range keys {
		out = AppendFramed(out, k)
	}
	return out, nil
}

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
				return p(func(rec []byte) error {
					key, value, err := codec.SplitPair(rec)
					if err != nil {
						return err
					}
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
		if err := p(func(rec []byte) error {
			key, value, err := codec.SplitPair(rec)
			if err != nil {
				return err
			}
			return write(key, value)
		}); err != nil {
			return nil, err
		}
	}
	st, err := w.Commit()
	if err != nil {
		return nil, err
	}
	ok = true
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
