package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

// Spark's monitoring API (status/api/v1), the subset docs/ui.md lists.
// Field names and shapes are Spark's; what drover does not measure is 0
// or empty, never absent, so Spark's clients parse every object.

// sparkDate is a time in the API's format: "2026-11-22T10:00:00.000GMT".
type sparkDate time.Time

func (d sparkDate) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(d).UTC().Format("2006-01-02T15:04:05.000") + `GMT"`), nil
}

// optDate is an Option[Date]: absent when zero.
func optDate(t time.Time) *sparkDate {
	if t.IsZero() {
		return nil
	}
	d := sparkDate(t)
	return &d
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type applicationInfo struct {
	ID       string               `json:"id"`
	Name     string               `json:"name"`
	Attempts []applicationAttempt `json:"attempts"`
}

type applicationAttempt struct {
	StartTime        sparkDate `json:"startTime"`
	EndTime          sparkDate `json:"endTime"`
	LastUpdated      sparkDate `json:"lastUpdated"`
	Duration         int64     `json:"duration"`
	SparkUser        string    `json:"sparkUser"`
	Completed        bool      `json:"completed"`
	AppSparkVersion  string    `json:"appSparkVersion"`
	StartTimeEpoch   int64     `json:"startTimeEpoch"`
	EndTimeEpoch     int64     `json:"endTimeEpoch"`
	LastUpdatedEpoch int64     `json:"lastUpdatedEpoch"`
}

type jobDataJSON struct {
	JobID               int64          `json:"jobId"`
	Name                string         `json:"name"`
	SubmissionTime      *sparkDate     `json:"submissionTime,omitempty"`
	CompletionTime      *sparkDate     `json:"completionTime,omitempty"`
	StageIDs            []int          `json:"stageIds"`
	JobTags             []string       `json:"jobTags"`
	Status              string         `json:"status"`
	NumTasks            int            `json:"numTasks"`
	NumActiveTasks      int            `json:"numActiveTasks"`
	NumCompletedTasks   int            `json:"numCompletedTasks"`
	NumSkippedTasks     int            `json:"numSkippedTasks"`
	NumFailedTasks      int            `json:"numFailedTasks"`
	NumKilledTasks      int            `json:"numKilledTasks"`
	NumCompletedIndices int            `json:"numCompletedIndices"`
	NumActiveStages     int            `json:"numActiveStages"`
	NumCompletedStages  int            `json:"numCompletedStages"`
	NumSkippedStages    int            `json:"numSkippedStages"`
	NumFailedStages     int            `json:"numFailedStages"`
	KilledTasksSummary  map[string]int `json:"killedTasksSummary"`
}

type stageDataJSON struct {
	Status                string     `json:"status"`
	StageID               int        `json:"stageId"`
	AttemptID             int        `json:"attemptId"`
	NumTasks              int        `json:"numTasks"`
	NumActiveTasks        int        `json:"numActiveTasks"`
	NumCompleteTasks      int        `json:"numCompleteTasks"`
	NumFailedTasks        int        `json:"numFailedTasks"`
	NumKilledTasks        int        `json:"numKilledTasks"`
	NumCompletedIndices   int        `json:"numCompletedIndices"`
	SubmissionTime        *sparkDate `json:"submissionTime,omitempty"`
	FirstTaskLaunchedTime *sparkDate `json:"firstTaskLaunchedTime,omitempty"`
	CompletionTime        *sparkDate `json:"completionTime,omitempty"`
	FailureReason         *string    `json:"failureReason,omitempty"`

	ExecutorDeserializeTime    int64 `json:"executorDeserializeTime"`
	ExecutorDeserializeCPUTime int64 `json:"executorDeserializeCpuTime"`
	ExecutorRunTime            int64 `json:"executorRunTime"`
	ExecutorCPUTime            int64 `json:"executorCpuTime"`
	ResultSize                 int64 `json:"resultSize"`
	JvmGcTime                  int64 `json:"jvmGcTime"`
	ResultSerializationTime    int64 `json:"resultSerializationTime"`
	MemoryBytesSpilled         int64 `json:"memoryBytesSpilled"`
	DiskBytesSpilled           int64 `json:"diskBytesSpilled"`
	PeakExecutionMemory        int64 `json:"peakExecutionMemory"`
	InputBytes                 int64 `json:"inputBytes"`
	InputRecords               int64 `json:"inputRecords"`
	OutputBytes                int64 `json:"outputBytes"`
	OutputRecords              int64 `json:"outputRecords"`
	ShuffleRemoteBlocksFetched int64 `json:"shuffleRemoteBlocksFetched"`
	ShuffleLocalBlocksFetched  int64 `json:"shuffleLocalBlocksFetched"`
	ShuffleFetchWaitTime       int64 `json:"shuffleFetchWaitTime"`
	ShuffleRemoteBytesRead     int64 `json:"shuffleRemoteBytesRead"`
	ShuffleRemoteBytesToDisk   int64 `json:"shuffleRemoteBytesReadToDisk"`
	ShuffleLocalBytesRead      int64 `json:"shuffleLocalBytesRead"`
	ShuffleReadBytes           int64 `json:"shuffleReadBytes"`
	ShuffleReadRecords         int64 `json:"shuffleReadRecords"`
	ShuffleWriteBytes          int64 `json:"shuffleWriteBytes"`
	ShuffleWriteTime           int64 `json:"shuffleWriteTime"`
	ShuffleWriteRecords        int64 `json:"shuffleWriteRecords"`

	Name               string                       `json:"name"`
	Details            string                       `json:"details"`
	SchedulingPool     string                       `json:"schedulingPool"`
	RddIDs             []int                        `json:"rddIds"`
	AccumulatorUpdates []struct{}                   `json:"accumulatorUpdates"`
	Tasks              map[string]taskDataJSON      `json:"tasks,omitempty"`
	ExecutorSummary    map[string]executorStageJSON `json:"executorSummary,omitempty"`
	KilledTasksSummary map[string]int               `json:"killedTasksSummary"`
	ResourceProfileID  int                          `json:"resourceProfileId"`
	ShufflePushEnabled bool                         `json:"isShufflePushEnabled"`
	ShuffleMergers     int                          `json:"shuffleMergersCount"`
	TaskDistributions  *taskMetricDistributionsJSON `json:"taskMetricsDistributions,omitempty"`
}

type taskDataJSON struct {
	TaskID             int64             `json:"taskId"`
	Index              int               `json:"index"`
	Attempt            int               `json:"attempt"`
	PartitionID        int               `json:"partitionId"`
	LaunchTime         sparkDate         `json:"launchTime"`
	Duration           *int64            `json:"duration,omitempty"`
	ExecutorID         string            `json:"executorId"`
	Host               string            `json:"host"`
	Status             string            `json:"status"`
	TaskLocality       string            `json:"taskLocality"`
	Speculative        bool              `json:"speculative"`
	AccumulatorUpdates []struct{}        `json:"accumulatorUpdates"`
	ErrorMessage       *string           `json:"errorMessage,omitempty"`
	TaskMetrics        *taskMetricsJSON  `json:"taskMetrics,omitempty"`
	ExecutorLogs       map[string]string `json:"executorLogs"`
	SchedulerDelay     int64             `json:"schedulerDelay"`
	GettingResultTime  int64             `json:"gettingResultTime"`
}

type taskMetricsJSON struct {
	ExecutorDeserializeTime    int64 `json:"executorDeserializeTime"`
	ExecutorDeserializeCPUTime int64 `json:"executorDeserializeCpuTime"`
	ExecutorRunTime            int64 `json:"executorRunTime"`
	ExecutorCPUTime            int64 `json:"executorCpuTime"`
	ResultSize                 int64 `json:"resultSize"`
	JvmGcTime                  int64 `json:"jvmGcTime"`
	ResultSerializationTime    int64 `json:"resultSerializationTime"`
	MemoryBytesSpilled         int64 `json:"memoryBytesSpilled"`
	DiskBytesSpilled           int64 `json:"diskBytesSpilled"`
	PeakExecutionMemory        int64 `json:"peakExecutionMemory"`
	InputMetrics               struct {
		BytesRead   int64 `json:"bytesRead"`
		RecordsRead int64 `json:"recordsRead"`
	} `json:"inputMetrics"`
	OutputMetrics struct {
		BytesWritten   int64 `json:"bytesWritten"`
		RecordsWritten int64 `json:"recordsWritten"`
	} `json:"outputMetrics"`
	ShuffleReadMetrics struct {
		RemoteBlocksFetched   int64 `json:"remoteBlocksFetched"`
		LocalBlocksFetched    int64 `json:"localBlocksFetched"`
		FetchWaitTime         int64 `json:"fetchWaitTime"`
		RemoteBytesRead       int64 `json:"remoteBytesRead"`
		RemoteBytesReadToDisk int64 `json:"remoteBytesReadToDisk"`
		LocalBytesRead        int64 `json:"localBytesRead"`
		RecordsRead           int64 `json:"recordsRead"`
		RemoteReqsDuration    int64 `json:"remoteReqsDuration"`
	} `json:"shuffleReadMetrics"`
	ShuffleWriteMetrics struct {
		BytesWritten   int64 `json:"bytesWritten"`
		WriteTime      int64 `json:"writeTime"`
		RecordsWritten int64 `json:"recordsWritten"`
	} `json:"shuffleWriteMetrics"`
}

type executorStageJSON struct {
	TaskTime            int64 `json:"taskTime"`
	FailedTasks         int   `json:"failedTasks"`
	SucceededTasks      int   `json:"succeededTasks"`
	KilledTasks         int   `json:"killedTasks"`
	InputBytes          int64 `json:"inputBytes"`
	InputRecords        int64 `json:"inputRecords"`
	OutputBytes         int64 `json:"outputBytes"`
	OutputRecords       int64 `json:"outputRecords"`
	ShuffleRead         int64 `json:"shuffleRead"`
	ShuffleReadRecords  int64 `json:"shuffleReadRecords"`
	ShuffleWrite        int64 `json:"shuffleWrite"`
	ShuffleWriteRecords int64 `json:"shuffleWriteRecords"`
	MemoryBytesSpilled  int64 `json:"memoryBytesSpilled"`
	DiskBytesSpilled    int64 `json:"diskBytesSpilled"`
	IsBlacklisted       bool  `json:"isBlacklistedForStage"`
	IsExcluded          bool  `json:"isExcludedForStage"`
}

type taskMetricDistributionsJSON struct {
	Quantiles                  []float64 `json:"quantiles"`
	Duration                   []float64 `json:"duration"`
	ExecutorDeserializeTime    []float64 `json:"executorDeserializeTime"`
	ExecutorDeserializeCPUTime []float64 `json:"executorDeserializeCpuTime"`
	ExecutorRunTime            []float64 `json:"executorRunTime"`
	ExecutorCPUTime            []float64 `json:"executorCpuTime"`
	ResultSize                 []float64 `json:"resultSize"`
	JvmGcTime                  []float64 `json:"jvmGcTime"`
	ResultSerializationTime    []float64 `json:"resultSerializationTime"`
	GettingResultTime          []float64 `json:"gettingResultTime"`
	SchedulerDelay             []float64 `json:"schedulerDelay"`
	PeakExecutionMemory        []float64 `json:"peakExecutionMemory"`
	MemoryBytesSpilled         []float64 `json:"memoryBytesSpilled"`
	DiskBytesSpilled           []float64 `json:"diskBytesSpilled"`
	InputMetrics               struct {
		BytesRead   []float64 `json:"bytesRead"`
		RecordsRead []float64 `json:"recordsRead"`
	} `json:"inputMetrics"`
	OutputMetrics struct {
		BytesWritten   []float64 `json:"bytesWritten"`
		RecordsWritten []float64 `json:"recordsWritten"`
	} `json:"outputMetrics"`
	ShuffleReadMetrics struct {
		ReadBytes             []float64 `json:"readBytes"`
		ReadRecords           []float64 `json:"readRecords"`
		RemoteBlocksFetched   []float64 `json:"remoteBlocksFetched"`
		LocalBlocksFetched    []float64 `json:"localBlocksFetched"`
		FetchWaitTime         []float64 `json:"fetchWaitTime"`
		RemoteBytesRead       []float64 `json:"remoteBytesRead"`
		RemoteBytesReadToDisk []float64 `json:"remoteBytesReadToDisk"`
		TotalBlocksFetched    []float64 `json:"totalBlocksFetched"`
	} `json:"shuffleReadMetrics"`
	ShuffleWriteMetrics struct {
		WriteBytes   []float64 `json:"writeBytes"`
		WriteRecords []float64 `json:"writeRecords"`
		WriteTime    []float64 `json:"writeTime"`
	} `json:"shuffleWriteMetrics"`
}

type executorSummaryJSON struct {
	ID                string            `json:"id"`
	HostPort          string            `json:"hostPort"`
	IsActive          bool              `json:"isActive"`
	RddBlocks         int               `json:"rddBlocks"`
	MemoryUsed        int64             `json:"memoryUsed"`
	DiskUsed          int64             `json:"diskUsed"`
	TotalCores        int               `json:"totalCores"`
	MaxTasks          int               `json:"maxTasks"`
	ActiveTasks       int               `json:"activeTasks"`
	FailedTasks       int               `json:"failedTasks"`
	CompletedTasks    int               `json:"completedTasks"`
	TotalTasks        int               `json:"totalTasks"`
	TotalDuration     int64             `json:"totalDuration"`
	TotalGCTime       int64             `json:"totalGCTime"`
	TotalInputBytes   int64             `json:"totalInputBytes"`
	TotalShuffleRead  int64             `json:"totalShuffleRead"`
	TotalShuffleWrite int64             `json:"totalShuffleWrite"`
	IsBlacklisted     bool              `json:"isBlacklisted"`
	MaxMemory         int64             `json:"maxMemory"`
	AddTime           sparkDate         `json:"addTime"`
	RemoveTime        *sparkDate        `json:"removeTime,omitempty"`
	RemoveReason      *string           `json:"removeReason,omitempty"`
	ExecutorLogs      map[string]string `json:"executorLogs"`
	BlacklistedIn     []int             `json:"blacklistedInStages"`
	Attributes        map[string]string `json:"attributes"`
	Resources         map[string]any    `json:"resources"`
	ResourceProfileID int               `json:"resourceProfileId"`
	IsExcluded        bool              `json:"isExcluded"`
	ExcludedInStages  []int             `json:"excludedInStages"`
}

type environmentJSON struct {
	Runtime struct {
		JavaVersion  string `json:"javaVersion"`
		JavaHome     string `json:"javaHome"`
		ScalaVersion string `json:"scalaVersion"`
	} `json:"runtime"`
	SparkProperties   [][2]string `json:"sparkProperties"`
	HadoopProperties  [][2]string `json:"hadoopProperties"`
	SystemProperties  [][2]string `json:"systemProperties"`
	MetricsProperties [][2]string `json:"metricsProperties"`
	ClasspathEntries  [][2]string `json:"classpathEntries"`
	ResourceProfiles  []struct{}  `json:"resourceProfiles"`
}

func (u *UI) routeAPI() {
	const app = "GET /api/v1/applications/{appId}"
	u.mux.HandleFunc("GET /api/v1/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]string{"spark": u.opts.Version})
	})
	u.mux.HandleFunc("GET /api/v1/applications", func(w http.ResponseWriter, _ *http.Request) {
		a := u.store.App()
		if a.ID == "" {
			writeJSON(w, []applicationInfo{})
			return
		}
		writeJSON(w, []applicationInfo{u.applicationInfo(a)})
	})
	u.mux.HandleFunc(app, u.api(func(a appstate.App, _ *http.Request) (any, error) { return u.applicationInfo(a), nil }))
	u.mux.HandleFunc(app+"/jobs", u.api(u.apiJobs))
	u.mux.HandleFunc(app+"/jobs/{jobId}", u.api(u.apiJob))
	u.mux.HandleFunc(app+"/stages", u.api(u.apiStages))
	u.mux.HandleFunc(app+"/stages/{stageId}", u.api(u.apiStageAttempts))
	u.mux.HandleFunc(app+"/stages/{stageId}/{attemptId}", u.api(u.apiStage))
	u.mux.HandleFunc(app+"/stages/{stageId}/{attemptId}/taskSummary", u.api(u.apiTaskSummary))
	u.mux.HandleFunc(app+"/stages/{stageId}/{attemptId}/taskList", u.api(u.apiTaskList))
	u.mux.HandleFunc(app+"/executors", u.api(func(a appstate.App, _ *http.Request) (any, error) { return u.apiExecutors(a, false), nil }))
	u.mux.HandleFunc(app+"/allexecutors", u.api(func(a appstate.App, _ *http.Request) (any, error) { return u.apiExecutors(a, true), nil }))
	u.mux.HandleFunc(app+"/environment", u.api(u.apiEnvironment))
}

// apiError is an answer other than 200, with Spark's wording.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &apiError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// api checks the application id of the path, then answers with f's value
// as JSON.
func (u *UI) api(f func(appstate.App, *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a := u.store.App()
		if id := r.PathValue("appId"); a.ID == "" || id != a.ID {
			http.Error(w, "unknown app: "+id, http.StatusNotFound)
			return
		}
		v, err := f(a, r)
		if err != nil {
			code := http.StatusInternalServerError
			if e, ok := err.(*apiError); ok {
				code = e.code
			}
			http.Error(w, err.Error(), code)
			return
		}
		writeJSON(w, v)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

func (u *UI) applicationInfo(a appstate.App) applicationInfo {
	// A running application has no end yet: Spark writes -1 there.
	end, duration := time.UnixMilli(-1), int64(0)
	if a.Ended {
		end, duration = a.End, a.End.Sub(a.Start).Milliseconds()
	}
	last := a.LastUpdated
	if last.IsZero() {
		last = a.Start
	}
	return applicationInfo{ID: a.ID, Name: a.Name, Attempts: []applicationAttempt{{
		StartTime: sparkDate(a.Start), EndTime: sparkDate(end), LastUpdated: sparkDate(last), Duration: duration,
		SparkUser: a.User, Completed: a.Ended, AppSparkVersion: u.opts.Version,
		StartTimeEpoch: a.Start.UnixMilli(), EndTimeEpoch: end.UnixMilli(), LastUpdatedEpoch: last.UnixMilli(),
	}}}
}

// statusFilter is the ?status= values asked, upper-cased; nil means all.
func statusFilter(r *http.Request) map[string]bool {
	vals := r.URL.Query()["status"]
	if len(vals) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, v := range vals {
		for s := range strings.SplitSeq(v, ",") {
			m[strings.ToUpper(strings.TrimSpace(s))] = true
		}
	}
	return m
}

func (u *UI) apiJobs(_ appstate.App, r *http.Request) (any, error) {
	return byStatus(r, u.store.Jobs(), func(j appstate.Job) string { return j.Status }, jobJSON), nil
}

// byStatus renders the items whose status the request's ?status= names
// (every item without one), never null.
func byStatus[T, J any](r *http.Request, items []T, status func(T) string, render func(T) J) []J {
	want := statusFilter(r)
	out := []J{}
	for _, it := range items {
		if want == nil || want[status(it)] {
			out = append(out, render(it))
		}
	}
	return out
}

func (u *UI) apiJob(_ appstate.App, r *http.Request) (any, error) {
	id, err := strconv.ParseInt(r.PathValue("jobId"), 10, 64)
	if err != nil {
		return nil, notFound("unknown job: %s", r.PathValue("jobId"))
	}
	j, ok := u.store.Job(id)
	if !ok {
		return nil, notFound("unknown job: %d", id)
	}
	return jobJSON(j), nil
}

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

func (u *UI) apiStages(_ appstate.App, r *http.Request) (any, error) {
	return byStatus(r, u.store.Stages(), func(st appstate.Stage) string { return st.Status }, stageJSON), nil
}

// stageID reads {stageId} and, when the path has it, {attemptId}.
func stageID(r *http.Request) (id, attempt int, err error) {
	id, err = strconv.Atoi(r.PathValue("stageId"))
	if err != nil {
		return 0, 0, notFound("unknown stage: %s", r.PathValue("stageId"))
	}
	if a := r.PathValue("attemptId"); a != "" {
		if attempt, err = strconv.Atoi(a); err != nil {
			return 0, 0, notFound("unknown attempt for stage %d: %s", id, a)
		}
	}
	return id, attempt, nil
}

func (u *UI) apiStageAttempts(_ appstate.App, r *http.Request) (any, error) {
	id, _, err := stageID(r)
	if err != nil {
		return nil, err
	}
	var out []stageDataJSON
	for _, st := range u.store.StageAttempts(id) {
		if d, ok := u.stageDetailJSON(st.ID, st.Attempt, r); ok {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, notFound("unknown stage: %d", id)
	}
	return out, nil
}

func (u *UI) apiStage(_ appstate.App, r *http.Request) (any, error) {
	id, attempt, err := stageID(r)
	if err != nil {
		return nil, err
	}
	d, ok := u.stageDetailJSON(id, attempt, r)
	if !ok {
		return nil, notFound("unknown attempt for stage %d.  Found attempts: %v", id, attemptIDs(u.store.StageAttempts(id)))
	}
	return d, nil
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

// stageDetailJSON adds tasks and the per-executor summary unless
// ?details=false, and the task distributions with ?withSummaries=true.
func (u *UI) stageDetailJSON(id, attempt int, r *http.Request) (stageDataJSON, bool) {
	q := r.URL.Query()
	details := q.Get("details") != "false"
	tq := appstate.TaskQuery{Length: 0}
	if details {
		tq.Length = -1
	}
	var qerr error
	if q.Get("withSummaries") == "true" {
		tq.Quantiles, qerr = quantilesParam(r)
	}
	d, dist, ok := u.store.StageTasks(id, attempt, tq)
	if !ok {
		return stageDataJSON{}, false
	}
	out := stageJSON(d.Stage)
	if details {
		links := u.logLinks()
		logs := map[executorid.ID]map[string]string{}
		for _, x := range u.store.Executors() {
			logs[x.ID] = executorLogs(links, x)
		}
		out.Tasks = map[string]taskDataJSON{}
		out.ExecutorSummary = map[string]executorStageJSON{}
		for _, t := range d.Tasks {
			out.Tasks[strconv.FormatInt(t.ID, 10)] = taskJSON(t, logs[t.Executor])
			s := out.ExecutorSummary[t.Executor.String()]
			s.TaskTime += t.Duration.Milliseconds()
			switch t.Status {
			case events.TaskSuccess:
				s.SucceededTasks++
			case events.TaskFailed:
				s.FailedTasks++
			case events.TaskKilled:
				s.KilledTasks++
			}
			s.InputBytes += t.Metrics.InputBytes
			s.InputRecords += t.Metrics.InputRecords
			s.OutputBytes += t.Metrics.OutputBytes
			s.OutputRecords += t.Metrics.OutputRecords
			s.ShuffleRead += t.Metrics.ShuffleReadBytes
			s.ShuffleReadRecords += t.Metrics.ShuffleReadRecords
			s.ShuffleWrite += t.Metrics.ShuffleWriteBytes
			s.ShuffleWriteRecords += t.Metrics.ShuffleWriteRecords
			s.DiskBytesSpilled += t.Metrics.SpillBytes
			out.ExecutorSummary[t.Executor.String()] = s
		}
	}
	if tq.Quantiles != nil && qerr == nil {
		if dist, err := distributionJSON(id, attempt, dist); err == nil {
			out.TaskDistributions = dist
		}
	}
	return out, true
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

// quantilesParam reads ?quantiles=0.05,0.5 (Spark's default set when absent).
func quantilesParam(r *http.Request) ([]float64, error) {
	s := r.URL.Query().Get("quantiles")
	if s == "" {
		return appstate.APIQuantiles, nil
	}
	var qs []float64
	for f := range strings.SplitSeq(s, ",") {
		q, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || q < 0 || q > 1 {
			return nil, badRequest("Bad value for parameter \"quantiles\".  Expected a double in [0, 1], got %q", f)
		}
		qs = append(qs, q)
	}
	return qs, nil
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

func (u *UI) apiTaskSummary(_ appstate.App, r *http.Request) (any, error) {
	id, attempt, err := stageID(r)
	if err != nil {
		return nil, err
	}
	qs, err := quantilesParam(r)
	if err != nil {
		return nil, err
	}
	_, dist, ok := u.store.StageTasks(id, attempt, appstate.TaskQuery{Quantiles: qs})
	if !ok {
		return nil, notFound("unknown attempt for stage %d.  Found attempts: %v", id, attemptIDs(u.store.StageAttempts(id)))
	}
	return distributionJSON(id, attempt, dist)
}

// apiTaskList pages the stage's tasks: ?offset= (0), ?length= (20),
// ?sortBy= ID (launch order), -ID, runtime or -runtime, ?status=.
func (u *UI) apiTaskList(_ appstate.App, r *http.Request) (any, error) {
	id, attempt, err := stageID(r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	offset, length := 0, 20
	if s := q.Get("offset"); s != "" {
		if offset, err = strconv.Atoi(s); err != nil || offset < 0 {
			return nil, badRequest("Bad value for parameter \"offset\": %q", s)
		}
	}
	if s := q.Get("length"); s != "" {
		if length, err = strconv.Atoi(s); err != nil || length < 0 {
			return nil, badRequest("Bad value for parameter \"length\": %q", s)
		}
	}
	tq := appstate.TaskQuery{Offset: offset, Length: length}
	if want := statusFilter(r); want != nil {
		tq.Status = func(status string) bool { return want[status] }
	}
	switch sortBy := q.Get("sortBy"); sortBy {
	case "", "ID":
		tq.Order = appstate.ByID
	case "-ID":
		tq.Order = appstate.ByIDDesc
	case "runtime":
		tq.Order = appstate.ByRuntime
	case "-runtime":
		tq.Order = appstate.ByRuntimeDesc
	default:
		return nil, badRequest("Bad value for parameter \"sortBy\": %q; expected ID, -ID, runtime or -runtime", sortBy)
	}
	d, _, ok := u.store.StageTasks(id, attempt, tq)
	if !ok {
		return nil, notFound("unknown attempt for stage %d.  Found attempts: %v", id, attemptIDs(u.store.StageAttempts(id)))
	}
	tasks := d.Tasks
	links := u.logLinks()
	logs := map[executorid.ID]map[string]string{}
	for _, x := range u.store.Executors() {
		logs[x.ID] = executorLogs(links, x)
	}
	out := []taskDataJSON{}
	for _, t := range tasks {
		out = append(out, taskJSON(t, logs[t.Executor]))
	}
	return out, nil
}

func executorLogs(links logLinks, x appstate.Executor) map[string]string {
	if url := links.url(x); url != "" {
		return map[string]string{"log": url}
	}
	return map[string]string{}
}

func (u *UI) apiExecutors(_ appstate.App, all bool) any {
	links := u.logLinks()
	out := []executorSummaryJSON{}
	for _, x := range u.store.Executors() {
		if !all && x.State != appstate.ExecutorActive {
			continue
		}
		if x.State == appstate.ExecutorPending {
			continue // not an executor to Spark until it registers
		}
		attrs := map[string]string{}
		if links.template != "" && x.ID != executorid.Driver {
			attrs = links.attributes(x)
		}
		out = append(out, executorSummaryJSON{ID: x.ID.String(), HostPort: x.HostPort, IsActive: x.State == appstate.ExecutorActive,
			TotalCores: x.Cores, MaxTasks: x.Cores, ActiveTasks: x.ActiveTasks, FailedTasks: x.FailedTasks,
			CompletedTasks: x.CompletedTasks, TotalTasks: x.TotalTasks, TotalDuration: x.TaskTime.Milliseconds(),
			TotalInputBytes: x.InputBytes, TotalShuffleRead: x.ShuffleRead, TotalShuffleWrite: x.ShuffleWrite,
			AddTime: sparkDate(x.Added), RemoveTime: optDate(x.Removed), RemoveReason: optString(x.RemoveReason),
			ExecutorLogs: executorLogs(links, x), BlacklistedIn: []int{}, Attributes: attrs, Resources: map[string]any{},
			ExcludedInStages: []int{}})
	}
	return out
}

func (u *UI) apiEnvironment(appstate.App, *http.Request) (any, error) {
	var out environmentJSON
	out.SparkProperties = [][2]string{}
	for _, p := range u.store.Conf() {
		out.SparkProperties = append(out.SparkProperties, [2]string{p.Key, p.Value})
	}
	out.HadoopProperties, out.SystemProperties, out.MetricsProperties, out.ClasspathEntries = [][2]string{}, [][2]string{}, [][2]string{}, [][2]string{}
	out.ResourceProfiles = []struct{}{}
	return out, nil
}
