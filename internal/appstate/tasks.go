package appstate

import (
	"slices"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

// taskRec is a remembered task attempt. A stage may keep 100,000 of them
// (spark.ui.retainedTasks), so it is small (56 bytes) and holds no
// pointers, which the garbage collector would have to follow: times are
// Unix nanoseconds (0 for none), the status is an index into the store's
// table, the host is the executor's (Store.hostOf), metrics are kept
// apart as most tasks have none, and so is a failure's reason.
type taskRec struct {
	id       int64
	executor executorid.ID
	launched int64
	ended    int64
	duration time.Duration

	partition, attempt int32
	metrics            int32 // 1 + index into stage.metrics, 0 for none
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
		t.Metrics = st.metrics[r.metrics-1]
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
