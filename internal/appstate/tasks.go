package appstate

import (
	"slices"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

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
