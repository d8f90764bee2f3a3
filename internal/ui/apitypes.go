package ui

import (
	"time"
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
	AttemptID        string    `json:"attemptId,omitempty"`
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
