package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

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
	return applicationInfo{ID: a.ID, Name: a.Name, Attempts: []applicationAttempt{{AttemptID: u.opts.AttemptID,
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
