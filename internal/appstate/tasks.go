package appstate

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
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

// taskRec is a task attempt, unpacked. Times are Unix nanoseconds (0 for
// none), the status an index into Store.statuses, the host the
// executor's (Store.hostOf), and a failure's reason is kept apart
// (stage.reasons), as only failed attempts have one.
type taskRec struct {
	id       int64
	executor executorid.ID
	launched int64
	ended    int64
	duration time.Duration

	partition, attempt int32
	status             uint8 // index into Store.statuses
	fetchFailed        bool
	metrics            events.TaskMetrics
}

// runningTask is an attempt not ended, kept small.
type runningTask struct {
	executor           executorid.ID
	launched           int64
	partition, attempt int32
}

func (t *runningTask) rec(id int64) taskRec {
	return taskRec{id: id, executor: t.executor, launched: t.launched, partition: t.partition, attempt: t.attempt,
		status: statusRunning}
}

// Indices of the task statuses every store knows (Store.statuses).
const (
	statusRunning uint8 = iota
	statusSuccess
	statusFailed
	statusKilled
)

// maxStatuses bounds the statuses a store interns; an unknown status
// beyond it is remembered as failed, which is how the counts treat it.
const maxStatuses = 256

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano is n in UTC: readers convert to the zone they show.
func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// statusIndex is status's index in s.statuses, interned when new.
func (s *Store) statusIndex(status string) uint8 {
	switch status {
	case events.TaskSuccess:
		return statusSuccess
	case events.TaskFailed:
		return statusFailed
	case events.TaskKilled:
		return statusKilled
	case TaskRunning:
		return statusRunning
	}
	if i := slices.Index(s.statuses, status); i >= 0 {
		return uint8(i)
	}
	if len(s.statuses) >= maxStatuses {
		return statusFailed
	}
	s.statuses = append(s.statuses, status)
	return uint8(len(s.statuses) - 1)
}

// setHost remembers executor id's host, interned, for its tasks.
func (s *Store) setHost(id executorid.ID, hostPort string) {
	h := host(hostPort)
	i, ok := s.hostIDs[h]
	if !ok {
		s.hosts = append(s.hosts, h)
		i = int32(len(s.hosts) - 1)
		s.hostIDs[h] = i
	}
	s.hostOf[id] = i
}

// task is r as the store's readers see it.
func (s *Store) task(st *stage, r *taskRec) Task {
	t := Task{ID: r.id, Partition: int(r.partition), Attempt: int(r.attempt), Executor: r.executor,
		Host: s.hosts[s.hostOf[r.executor]], Launched: fromUnixNano(r.launched), Ended: fromUnixNano(r.ended),
		Duration: r.duration, Status: s.statuses[r.status], FetchFailed: r.fetchFailed, Metrics: r.metrics}
	if r.status != statusRunning && r.status != statusSuccess {
		t.Reason = st.reasons[r.id]
	}
	return t
}

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

// idSet is a set of task ids, as bitmaps of 4,096 ids: a stage's ids are
// dense, so 100,000 of them take about 13 kB. The bitmap used last is
// kept: ids come mostly in order.
type idSet struct {
	blocks   map[int64]*[64]uint64
	lastKey  int64
	lastBits *[64]uint64
}

func (s *idSet) bits(id int64, create bool) *[64]uint64 {
	k := id >> 12
	if s.lastBits != nil && s.lastKey == k {
		return s.lastBits
	}
	w := s.blocks[k]
	if w == nil {
		if !create {
			return nil
		}
		w = new([64]uint64)
		s.blocks[k] = w
	}
	s.lastKey, s.lastBits = k, w
	return w
}

func (s *idSet) add(id int64) {
	w := s.lastBits
	if w == nil || s.lastKey != id>>12 { // the bitmap used last, without a call
		w = s.bits(id, true)
	}
	w[id>>6&63] |= 1 << (id & 63)
}

func (s *idSet) has(id int64) bool {
	w := s.lastBits
	if w == nil || s.lastKey != id>>12 {
		w = s.bits(id, false)
	}
	return w != nil && w[id>>6&63]&(1<<(id&63)) != 0
}

// remembered is how many attempts st remembers.
func (st *stage) remembered() int { return st.running.Len() + st.ended.n }

// known reports whether attempt id is running or ended, remembered or not.
func (st *stage) known(id int64) bool {
	_, ok := st.running.Get(id)
	return ok || st.endedIDs.has(id)
}

// forgetEnded drops the n attempts that ended first, as Spark drops the
// tasks of the earliest completion, and returns how many it dropped.
func (st *stage) forgetEnded(n int) int {
	n = min(n, st.ended.n)
	var dropped func(r *taskRec)
	if len(st.reasons) > 0 {
		dropped = func(r *taskRec) { delete(st.reasons, r.id) }
	}
	st.ended.forget(n, dropped)
	return n
}

// each calls f with every remembered attempt, the ended ones in end order
// then the running ones by id, until f returns false. withMetrics decodes the
// metrics too.
func (st *stage) each(withMetrics bool, f func(r *taskRec) bool) {
	d := st.ended.reader()
	for d.next(withMetrics) {
		if !f(&d.r) {
			return
		}
	}
	// In id order: StageTasks counts on the same order in both passes.
	for id, t := range st.running.All() {
		r := t.rec(id)
		if !f(&r) {
			return
		}
	}
}

// TaskOrder is the order in which Store.StageTasks returns tasks.
type TaskOrder int

const (
	// ByID is launch order: ids grow as attempts are launched.
	ByID TaskOrder = iota
	ByIDDesc
	// ByRuntime and ByRuntimeDesc order by duration, then by id.
	ByRuntime
	ByRuntimeDesc
)

// TaskQuery selects a page of a stage's remembered tasks.
type TaskQuery struct {
	// Status keeps the tasks it accepts; nil keeps all.
	Status func(status string) bool
	Order  TaskOrder
	// Offset and Length page the ordered tasks; Length < 0 returns all.
	Offset, Length int
	// Quantiles, when not nil, ask for the distribution of the
	// successful tasks' metrics at these quantiles.
	Quantiles []float64
}

// StageTasks is one stage attempt whose Tasks are the page q selects (of
// Matched tasks), with the distribution at q.Quantiles. It decodes the
// stage's packed tasks without unpacking them all at once: a page of a
// stage of 100,000 tasks costs a few hundred kB, not tens of MB.
func (s *Store) StageTasks(id, attempt int, q TaskQuery) (StageDetail, Distribution, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.stages[StageKey{id, attempt}]
	if st == nil {
		return StageDetail{}, Distribution{}, false
	}
	d := s.stageHead(st)
	var dist Distribution
	if q.Quantiles != nil {
		dist = st.distribution(q.Quantiles)
	}
	// The matching tasks' sort keys and their places in each's order;
	// then the page's tasks are decoded in a second pass.
	type key struct {
		k, id int64
		at    int32
	}
	var keys []key
	if q.Length != 0 {
		keys = make([]key, 0, st.remembered())
	}
	at := int32(0)
	st.each(false, func(r *taskRec) bool {
		if q.Status == nil || q.Status(s.statuses[r.status]) {
			d.Matched++
			if q.Length == 0 {
				return true // counted, not listed
			}
			k := key{id: r.id, at: at}
			if q.Order == ByRuntime || q.Order == ByRuntimeDesc {
				k.k = int64(r.duration)
			}
			keys = append(keys, k)
		}
		at++
		return true
	})
	slices.SortFunc(keys, func(a, b key) int {
		switch q.Order {
		case ByIDDesc:
			return cmp.Compare(b.id, a.id)
		case ByRuntimeDesc:
			return cmp.Or(cmp.Compare(b.k, a.k), cmp.Compare(a.id, b.id))
		}
		return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.id, b.id))
	})
	keys = keys[min(q.Offset, len(keys)):]
	if q.Length >= 0 {
		keys = keys[:min(q.Length, len(keys))]
	}
	if len(keys) == 0 {
		d.Tasks = []Task{}
		return d, dist, true
	}
	// The page's places in each's order, to pick them up in one pass.
	order := make([]int32, len(keys))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(keys[a].at, keys[b].at) })
	d.Tasks = make([]Task, len(keys))
	at = 0
	st.each(true, func(r *taskRec) bool {
		if i := order[0]; keys[i].at == at {
			d.Tasks[i] = s.task(st, r)
			if order = order[1:]; len(order) == 0 {
				return false
			}
		}
		at++
		return true
	})
	return d, dist, true
}

// distribution is the quantiles qs of the successful remembered tasks'
// metrics, a series at a time in one reused buffer.
func (st *stage) distribution(qs []float64) Distribution {
	var n int
	st.each(false, func(r *taskRec) bool {
		if r.status == statusSuccess {
			n++
		}
		return true
	})
	xs := make([]float64, 0, n)
	return summarize(qs, n, func(value func(d time.Duration, m *events.TaskMetrics) float64) []float64 {
		xs = xs[:0]
		st.each(true, func(r *taskRec) bool {
			if r.status == statusSuccess {
				xs = append(xs, value(r.duration, &r.metrics))
			}
			return true
		})
		return xs
	})
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
