package ui

import (
	"slices"

	"github.com/drover-project/drover/internal/appstate"
)

func jobJSON(j appstate.Job) jobDataJSON {
	ids := slices.Clone(j.StageIDs)
	if ids == nil {
		ids = []int{}
	}
	slices.Sort(ids)
	return jobDataJSON{JobID: j.ID, Name: j.Name, SubmissionTime: optDate(j.Submitted), CompletionTime: optDate(j.Completed),
		StageIDs: ids, JobTags: []string{}, Status: j.Status, NumTasks: j.NumTasks, NumActiveTasks: j.ActiveTasks,
		NumCompletedTasks: j.CompletedTasks, NumFailedTasks: j.FailedTasks, NumKilledTasks: j.KilledTasks,
		NumCompletedIndices: j.CompletedIndices, NumActiveStages: j.ActiveStages, NumCompletedStages: j.CompletedStages,
		NumFailedStages: j.FailedStages, KilledTasksSummary: orEmpty(j.KilledTasksSummary)}
}

func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

func attemptIDs(sts []appstate.Stage) []int {
	ids := []int{}
	for _, st := range sts {
		ids = append(ids, st.Attempt)
	}
	return ids
}

func stageJSON(st appstate.Stage) stageDataJSON {
	m := st.Metrics
	return stageDataJSON{Status: st.Status, StageID: st.ID, AttemptID: st.Attempt, NumTasks: st.NumTasks,
		NumActiveTasks: st.ActiveTasks, NumCompleteTasks: st.CompleteTasks, NumFailedTasks: st.FailedTasks,
		NumKilledTasks: st.KilledTasks, NumCompletedIndices: st.CompletedIndices,
		SubmissionTime: optDate(st.Submitted), FirstTaskLaunchedTime: optDate(st.FirstTaskLaunched),
		CompletionTime: optDate(st.Completed), FailureReason: optString(st.FailureReason),
		ExecutorRunTime: st.RunTime.Milliseconds(), ResultSize: m.ResultBytes, DiskBytesSpilled: m.SpillBytes,
		InputBytes: m.InputBytes, InputRecords: m.InputRecords, OutputBytes: m.OutputBytes, OutputRecords: m.OutputRecords,
		ShuffleRemoteBytesRead: m.ShuffleReadBytes, ShuffleReadBytes: m.ShuffleReadBytes, ShuffleReadRecords: m.ShuffleReadRecords,
		ShuffleWriteBytes: m.ShuffleWriteBytes, ShuffleWriteRecords: m.ShuffleWriteRecords,
		Name: st.Name, SchedulingPool: "default", RddIDs: []int{}, AccumulatorUpdates: []struct{}{},
		KilledTasksSummary: orEmpty(st.KilledTasksSummary)}
}

func taskJSON(t appstate.Task, logs map[string]string) taskDataJSON {
	out := taskDataJSON{TaskID: t.ID, Index: t.Partition, Attempt: t.Attempt, PartitionID: t.Partition,
		LaunchTime: sparkDate(t.Launched), ExecutorID: t.Executor.String(), Host: t.Host, Status: t.Status,
		TaskLocality: "ANY", AccumulatorUpdates: []struct{}{}, ErrorMessage: optString(t.Reason), ExecutorLogs: orEmpty(logs)}
	if t.Status != appstate.TaskRunning {
		ms := t.Duration.Milliseconds()
		out.Duration = &ms
		m := &taskMetricsJSON{ExecutorRunTime: ms, ResultSize: t.Metrics.ResultBytes, DiskBytesSpilled: t.Metrics.SpillBytes}
		m.InputMetrics.BytesRead, m.InputMetrics.RecordsRead = t.Metrics.InputBytes, t.Metrics.InputRecords
		m.OutputMetrics.BytesWritten, m.OutputMetrics.RecordsWritten = t.Metrics.OutputBytes, t.Metrics.OutputRecords
		m.ShuffleReadMetrics.RemoteBytesRead, m.ShuffleReadMetrics.RecordsRead = t.Metrics.ShuffleReadBytes, t.Metrics.ShuffleReadRecords
		m.ShuffleWriteMetrics.BytesWritten, m.ShuffleWriteMetrics.RecordsWritten = t.Metrics.ShuffleWriteBytes, t.Metrics.ShuffleWriteRecords
		out.TaskMetrics = m
	}
	return out
}

func distributionJSON(id, attempt int, dist appstate.Distribution) (*taskMetricDistributionsJSON, error) {
	if dist.Tasks == 0 {
		return nil, notFound("No tasks reported metrics for %d / %d", id, attempt)
	}
	qs := dist.Quantiles
	zero := make([]float64, len(qs))
	out := &taskMetricDistributionsJSON{Quantiles: qs, Duration: dist.Duration, ExecutorRunTime: dist.Duration,
		ResultSize: dist.ResultBytes, DiskBytesSpilled: dist.SpillBytes,
		ExecutorDeserializeTime: zero, ExecutorDeserializeCPUTime: zero, ExecutorCPUTime: zero, JvmGcTime: zero,
		ResultSerializationTime: zero, GettingResultTime: zero, SchedulerDelay: zero, PeakExecutionMemory: zero,
		MemoryBytesSpilled: zero}
	out.InputMetrics.BytesRead, out.InputMetrics.RecordsRead = dist.InputBytes, dist.InputRecords
	out.OutputMetrics.BytesWritten, out.OutputMetrics.RecordsWritten = dist.OutputBytes, dist.OutputRecords
	sr := &out.ShuffleReadMetrics
	sr.ReadBytes, sr.ReadRecords, sr.RemoteBytesRead = dist.ShuffleReadBytes, dist.ShuffleReadRecs, dist.ShuffleReadBytes
	sr.RemoteBlocksFetched, sr.LocalBlocksFetched, sr.FetchWaitTime, sr.RemoteBytesReadToDisk, sr.TotalBlocksFetched = zero, zero, zero, zero, zero
	sw := &out.ShuffleWriteMetrics
	sw.WriteBytes, sw.WriteRecords, sw.WriteTime = dist.ShuffleWriteBytes, dist.ShuffleWriteRecs, zero
	return out, nil
}

// executorLogs is Spark's executorLogs of x: {"log": url}, the name Spark
// gives one link that is not per file (ExecutorLogUrlHandler), for the
// custom link or the kept log (stdout and stderr together).
func executorLogs(links logLinks, x appstate.Executor) map[string]string {
	if url := links.apiLink(x); url != "" {
		return map[string]string{"log": url}
	}
	return map[string]string{}
}
