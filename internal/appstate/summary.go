package appstate

import (
	"slices"
	"time"

	"github.com/drover-project/drover/internal/events"
)

// PageQuantiles are the columns of Spark's stage page: min, 25th
// percentile, median, 75th percentile, max.
var PageQuantiles = []float64{0, 0.25, 0.5, 0.75, 1}

// APIQuantiles are the REST API's default quantiles (taskSummary).
var APIQuantiles = []float64{0.05, 0.25, 0.5, 0.75, 0.95}

// Distribution is the quantiles of a stage's task metrics, over its
// successful remembered tasks, as Spark's taskSummary.
type Distribution struct {
	Quantiles []float64
	// Tasks is how many tasks the quantiles are over.
	Tasks int
	// Duration is in milliseconds; the others in bytes or records.
	Duration                            []float64
	InputBytes, InputRecords            []float64
	OutputBytes, OutputRecords          []float64
	ShuffleReadBytes, ShuffleReadRecs   []float64
	ShuffleWriteBytes, ShuffleWriteRecs []float64
	SpillBytes, ResultBytes             []float64
}

// Summary is the distribution of the stage's successful tasks' metrics at
// quantiles qs (each in [0, 1]); every series is empty when no task
// succeeded yet.
func (d StageDetail) Summary(qs []float64) Distribution {
	var ok []*Task
	for i := range d.Tasks {
		if d.Tasks[i].Status == events.TaskSuccess {
			ok = append(ok, &d.Tasks[i])
		}
	}
	xs := make([]float64, 0, len(ok))
	return summarize(qs, len(ok), func(value func(time.Duration, *events.TaskMetrics) float64) []float64 {
		xs = xs[:0]
		for _, t := range ok {
			xs = append(xs, value(t.Duration, &t.Metrics))
		}
		return xs
	})
}

// summarize is the distribution over n successful tasks at quantiles qs;
// values returns the values of one series over them, in any order, in a
// slice the next call may reuse.
func summarize(qs []float64, n int, values func(func(time.Duration, *events.TaskMetrics) float64) []float64) Distribution {
	dist := Distribution{Quantiles: slices.Clone(qs), Tasks: n}
	if n == 0 {
		return dist
	}
	metric := func(f func(*events.TaskMetrics) int64) []float64 {
		return quantiles(values(func(_ time.Duration, m *events.TaskMetrics) float64 { return float64(f(m)) }), qs)
	}
	dist.Duration = quantiles(values(func(d time.Duration, _ *events.TaskMetrics) float64 { return float64(d.Microseconds()) / 1000 }), qs)
	dist.InputBytes = metric(func(m *events.TaskMetrics) int64 { return m.InputBytes })
	dist.InputRecords = metric(func(m *events.TaskMetrics) int64 { return m.InputRecords })
	dist.OutputBytes = metric(func(m *events.TaskMetrics) int64 { return m.OutputBytes })
	dist.OutputRecords = metric(func(m *events.TaskMetrics) int64 { return m.OutputRecords })
	dist.ShuffleReadBytes = metric(func(m *events.TaskMetrics) int64 { return m.ShuffleReadBytes })
	dist.ShuffleReadRecs = metric(func(m *events.TaskMetrics) int64 { return m.ShuffleReadRecords })
	dist.ShuffleWriteBytes = metric(func(m *events.TaskMetrics) int64 { return m.ShuffleWriteBytes })
	dist.ShuffleWriteRecs = metric(func(m *events.TaskMetrics) int64 { return m.ShuffleWriteRecords })
	dist.SpillBytes = metric(func(m *events.TaskMetrics) int64 { return m.SpillBytes })
	dist.ResultBytes = metric(func(m *events.TaskMetrics) int64 { return m.ResultBytes })
	return dist
}

// quantiles of xs at qs: the value at index min(q·n, n-1) of the sorted
// values, Spark's rule. xs is sorted in place.
func quantiles(xs, qs []float64) []float64 {
	slices.Sort(xs)
	n := len(xs)
	out := make([]float64, len(qs))
	for i, q := range qs {
		out[i] = xs[min(max(int(q*float64(n)), 0), n-1)]
	}
	return out
}
