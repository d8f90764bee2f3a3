package appstate

import (
	"cmp"
	"slices"
	"time"

	"github.com/drover-project/drover/internal/events"
)

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
