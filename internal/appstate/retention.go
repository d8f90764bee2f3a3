package appstate

import (
	"net"
)

// toForget is how many of n items to drop to keep at most keep, in
// batches of a tenth as Spark does, so trimming is not paid per event.
func toForget(n, keep int) int {
	if n <= keep {
		return 0
	}
	return max(keep/10, n-keep)
}

func (s *Store) trimJobs() {
	n := toForget(len(s.jobOrder), s.opts.RetainedJobs)
	s.jobOrder = forget(s.jobOrder, n, func(id int64) bool {
		if s.jobs[id].Status == JobRunning {
			return false
		}
		delete(s.jobs, id)
		s.lastJob = nil
		return true
	})
}

func (s *Store) trimStages() {
	n := toForget(len(s.stageOrder), s.opts.RetainedStages)
	s.stageOrder = forget(s.stageOrder, n, func(k StageKey) bool {
		if s.stages[k].Status == StageActive {
			return false
		}
		delete(s.stages, k)
		s.lastStage = nil
		return true
	})
}

func (s *Store) trimTasks(st *stage) {
	if n := toForget(st.remembered(), s.opts.RetainedTasks); n > 0 {
		st.forgotten += st.forgetEnded(n)
	}
}

// forget drops up to n items of order, oldest first, that drop accepts,
// and returns what remains in order.
func forget[K any](order []K, n int, drop func(K) bool) []K {
	if n == 0 {
		return order
	}
	out := order[:0]
	for _, k := range order {
		if n > 0 && drop(k) {
			n--
			continue
		}
		out = append(out, k)
	}
	clear(order[len(out):])
	return out
}

// host is the host part of host:port.
func host(hostPort string) string {
	if h, _, err := net.SplitHostPort(hostPort); err == nil {
		return h
	}
	return hostPort
}

// ring keeps the latest max values.
type ring[T any] struct {
	max   int
	items []T
	next  int
}

func (r *ring[T]) add(v T) {
	if len(r.items) < r.max {
		r.items = append(r.items, v)
		return
	}
	r.items[r.next] = v
	r.next = (r.next + 1) % r.max
}

// newestFirst returns a copy of the values, newest first.
func (r *ring[T]) newestFirst() []T {
	out := make([]T, 0, len(r.items))
	for i := range len(r.items) {
		out = append(out, r.items[(r.next-1-i+2*len(r.items))%len(r.items)])
	}
	return out
}
