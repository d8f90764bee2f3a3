package appstate

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

// taskRec is a remembered task attempt. A stage may keep 100,000 of them
// (spark.ui.retainedTasks), so it is small (56 bytes) and holds no
// pointers, which the garbage collector would have to follow: times are
// Unix nanoseconds (0 for none), the status is an index into the store's
// table, the host is the executor's (Store.hostOf), metrics are packed
// apart (stage.metrics) as most of them are zero, and so is a failure's
// reason.
type taskRec struct {
	id       int64
	executor executorid.ID
	launched int64
	ended    int64
	duration time.Duration

	partition, attempt int32
	metrics            int32 // 1 + offset in stage.metrics, 0 for none
	status             uint8 // index into Store.statuses
	fetchFailed        bool
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
		Duration: r.duration, Status: s.statuses[r.status], FetchFailed: r.fetchFailed}
	if r.metrics > 0 {
		t.Metrics = unpackMetrics(st.metrics[r.metrics-1:])
	}
	if r.status != statusRunning && r.status != statusSuccess {
		t.Reason = st.reasons[r.id]
	}
	return t
}

// find is the slot of task id in st.tasks, or -1.
func (st *stage) find(id int64) int {
	if i, ok := st.running[id]; ok {
		return int(i)
	}
	if !st.unsorted {
		// Attempts are launched, so appended, in the order of their ids.
		i, ok := slices.BinarySearchFunc(st.tasks, id, func(r taskRec, id int64) int {
			switch {
			case r.id < id:
				return -1
			case r.id > id:
				return 1
			}
			return 0
		})
		if ok {
			return i
		}
		return -1
	}
	for i := range st.tasks {
		if st.tasks[i].id == id {
			return i
		}
	}
	return -1
}

// add appends r, running, and returns its slot.
func (st *stage) add(r taskRec) int {
	if n := len(st.tasks); n > 0 && st.tasks[n-1].id >= r.id {
		st.unsorted = true
	}
	st.tasks = append(st.tasks, r)
	i := len(st.tasks) - 1
	st.running[r.id] = int32(i)
	return i
}

// packMetrics appends m to dst: a two-byte mask of its non-zero fields,
// then those as zigzag varints. A task that only sends a result of a
// few kB takes 4 bytes instead of 80.
func packMetrics(dst []byte, m *events.TaskMetrics) []byte {
	fs := metricFields(m)
	var mask uint16
	for i, f := range fs {
		if *f != 0 {
			mask |= 1 << i
		}
	}
	dst = append(dst, byte(mask), byte(mask>>8))
	for _, f := range fs {
		if *f != 0 {
			dst = binary.AppendVarint(dst, *f)
		}
	}
	return dst
}

// unpackMetrics decodes what packMetrics appended at the start of b.
func unpackMetrics(b []byte) events.TaskMetrics {
	var m events.TaskMetrics
	mask := uint16(b[0]) | uint16(b[1])<<8
	b = b[2:]
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
	mask := uint16(b[0]) | uint16(b[1])<<8
	n := 2
	for range bits.OnesCount16(mask) {
		_, k := binary.Varint(b[n:])
		n += k
	}
	return n
}

func metricFields(m *events.TaskMetrics) [10]*int64 {
	return [10]*int64{&m.ResultBytes, &m.InputBytes, &m.InputRecords, &m.OutputBytes, &m.OutputRecords,
		&m.ShuffleReadBytes, &m.ShuffleReadRecords, &m.ShuffleWriteBytes, &m.ShuffleWriteRecords, &m.SpillBytes}
}
