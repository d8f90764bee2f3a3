package appstate

import (
	"encoding/binary"
	"math/bits"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

// A stage may remember 100,000 task attempts (spark.ui.retainedTasks), so
// the ended ones, nearly all, are kept packed: stage.ended is a byte log
// of their records in end order, each field a varint, most as the
// difference from the record before, which for tasks of one stage is
// small (ids, partitions and launch times that follow each other). A
// no-op task takes about 11 bytes there, where a struct took 56 and its
// metrics 4 more. Running attempts, a few per executor core, are
// structs in a map. Readers decode the log as they go: no read keeps it
// unpacked.
//
// A record is: id, partition, launched (each as the difference from the
// previous record's, zigzag), executor, ended - launched, duration
// (zigzag), status | fetchFailed<<8 | sameMetrics<<9 | attempt<<10
// (uvarint, one byte for a first attempt), then the metrics (packMetrics)
// unless they are the previous record's (sameMetrics: tasks of a stage
// often measure alike, and packing them is a fifth of a record's cost). Times are kept to the
// microsecond, which saves 3 of 14 bytes a task: Spark keeps milliseconds, and the pages and the REST API
// show no finer than that (the quantiles of durations use microseconds).

// taskLog is the packed records of ended attempts, in end order, in
// chunks of up to 32 KiB that are never copied once full: one slice
// growing by doubling would leave each of its former arrays, large
// objects of their own, as free heap pages the next cannot reuse. A
// chunk's first record is encoded against nothing, so that forgetting
// the oldest tasks drops whole chunks.
type taskLog struct {
	chunks []logChunk
	n      int     // records
	last   taskRec // the latest record, which the next is encoded against
}

type logChunk struct {
	b []byte
	n int // records
}

// Chunks start small, for the many stages of few tasks, and double up to
// maxChunk, the largest object the Go allocator packs into shared pages.
const (
	minChunk = 512
	maxChunk = 32 << 10
	// maxRecord bounds a record's length: seven varints of at most 10
	// bytes, a mask of ten bits (2 bytes) and ten metrics.
	maxRecord = 7*binary.MaxVarintLen64 + 2 + 10*binary.MaxVarintLen64
)

// add appends r.
func (l *taskLog) add(r *taskRec) {
	k := len(l.chunks) - 1
	if k >= 0 && cap(l.chunks[k].b)-len(l.chunks[k].b) >= maxRecord {
		// Room for any record: encoded in place, not copied.
		l.chunks[k].b = appendRecord(l.chunks[k].b, r, &l.last)
		l.chunks[k].n++
		l.n++
		l.last = *r
		return
	}
	var buf [maxRecord]byte
	b := appendRecord(buf[:0], r, &l.last)
	if k < 0 || cap(l.chunks[k].b)-len(l.chunks[k].b) < len(b) {
		size := minChunk
		if k >= 0 {
			size = min(2*cap(l.chunks[k].b), maxChunk)
		}
		l.chunks = append(l.chunks, logChunk{b: make([]byte, 0, size)})
		k++
		b = appendRecord(buf[:0], r, &taskRec{})
	}
	l.chunks[k].b = append(l.chunks[k].b, b...)
	l.chunks[k].n++
	l.n++
	l.last = *r
}

// appendRecord appends r encoded against prev, the record before it.
func appendRecord(b []byte, r, prev *taskRec) []byte {
	b = binary.AppendVarint(b, r.id-prev.id)
	b = binary.AppendVarint(b, int64(r.partition)-int64(prev.partition))
	b = binary.AppendVarint(b, r.launched/1e3-prev.launched/1e3)
	b = binary.AppendVarint(b, int64(r.executor))
	b = binary.AppendVarint(b, r.ended/1e3-r.launched/1e3)
	b = binary.AppendVarint(b, r.duration.Microseconds())
	state := uint64(r.status) | uint64(uint32(r.attempt))<<10
	if r.fetchFailed {
		state |= 1 << 8
	}
	if r.metrics == prev.metrics {
		return binary.AppendUvarint(b, state|1<<9)
	}
	b = binary.AppendUvarint(b, state)
	return packMetrics(b, &r.metrics)
}

// forget drops the first n records (at most all), calling dropped with
// each when it is not nil.
func (l *taskLog) forget(n int, dropped func(r *taskRec)) {
	n = min(n, l.n)
	l.n -= n
	for n > 0 && l.chunks[0].n <= n {
		if dropped != nil {
			for d := (taskReader{chunks: l.chunks[:1]}); d.next(false); {
				dropped(&d.r)
			}
		}
		n -= l.chunks[0].n
		l.chunks[0] = logChunk{}
		l.chunks = l.chunks[1:]
	}
	if n == 0 {
		return
	}
	// The rest of the first chunk, its new first record encoded afresh.
	old := l.chunks[0]
	c := logChunk{b: make([]byte, 0, len(old.b)+maxRecord)}
	var prev taskRec
	i := 0
	for d := (taskReader{chunks: []logChunk{old}}); d.next(true); i++ {
		if i < n {
			if dropped != nil {
				dropped(&d.r)
			}
			continue
		}
		c.b = appendRecord(c.b, &d.r, &prev)
		c.n++
		prev = d.r
	}
	l.chunks[0] = c
}

// bytes is the log's length, for tests and profiles.
func (l *taskLog) bytes() (n int) {
	for _, c := range l.chunks {
		n += len(c.b)
	}
	return n
}

// taskReader decodes a taskLog from its start.
type taskReader struct {
	chunks []logChunk
	b      []byte // the chunk being read
	off    int
	r      taskRec
}

func (l *taskLog) reader() taskReader { return taskReader{chunks: l.chunks} }

// next decodes the next record into d.r, with its metrics when withMetrics
// (skipped otherwise); false at the end.
func (d *taskReader) next(withMetrics bool) bool {
	if d.off >= len(d.b) {
		if len(d.chunks) == 0 {
			return false
		}
		d.b, d.chunks, d.off, d.r = d.chunks[0].b, d.chunks[1:], 0, taskRec{}
	}
	r := &d.r
	r.id += d.varint()
	r.partition += int32(d.varint())
	r.launched += d.varint() * 1e3
	r.executor = executorid.ID(d.varint())
	r.ended = r.launched + d.varint()*1e3
	r.duration = time.Duration(d.varint()) * time.Microsecond
	state := d.uvarint()
	r.status, r.fetchFailed, r.attempt = uint8(state), state&(1<<8) != 0, int32(uint32(state>>10))
	if state&(1<<9) != 0 {
		return true // the previous record's metrics, in r already
	}
	if withMetrics {
		r.metrics = unpackMetrics(d.b[d.off:])
	}
	d.off += metricsLen(d.b[d.off:])
	return true
}

func (d *taskReader) varint() int64 {
	v, n := binary.Varint(d.b[d.off:])
	d.off += n
	return v
}

func (d *taskReader) uvarint() uint64 {
	v, n := binary.Uvarint(d.b[d.off:])
	d.off += n
	return v
}

// packMetrics appends m to dst: a varint mask of its non-zero fields, then
// those as zigzag varints. A task that only sends a result of a few kB
// takes 3 bytes instead of 80.
func packMetrics(dst []byte, m *events.TaskMetrics) []byte {
	// Values, not metricFields' pointers: this runs for every task.
	vs := [10]int64{m.ResultBytes, m.InputBytes, m.InputRecords, m.OutputBytes, m.OutputRecords,
		m.ShuffleReadBytes, m.ShuffleReadRecords, m.ShuffleWriteBytes, m.ShuffleWriteRecords, m.SpillBytes}
	var mask uint64
	for i, v := range vs {
		if v != 0 {
			mask |= 1 << i
		}
	}
	dst = binary.AppendUvarint(dst, mask)
	for _, v := range vs {
		if v != 0 {
			dst = binary.AppendVarint(dst, v)
		}
	}
	return dst
}

// unpackMetrics decodes what packMetrics appended at the start of b.
func unpackMetrics(b []byte) events.TaskMetrics {
	var m events.TaskMetrics
	mask, n := binary.Uvarint(b)
	b = b[n:]
	for i, f := range metricFields(&m) {
		if mask&(1<<i) != 0 {
			v, n := binary.Varint(b)
			*f, b = v, b[n:]
		}
	}
	return m
}

// metricsLen is the length of the packed metrics at the start of b.
func metricsLen(b []byte) int {
	mask, n := binary.Uvarint(b)
	for range bits.OnesCount64(mask) {
		_, k := binary.Varint(b[n:])
		n += k
	}
	return n
}

func metricFields(m *events.TaskMetrics) [10]*int64 {
	return [10]*int64{&m.ResultBytes, &m.InputBytes, &m.InputRecords, &m.OutputBytes, &m.OutputRecords,
		&m.ShuffleReadBytes, &m.ShuffleReadRecords, &m.ShuffleWriteBytes, &m.ShuffleWriteRecords, &m.SpillBytes}
}
