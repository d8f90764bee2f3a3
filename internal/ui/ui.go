package ui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/objstore"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options configures a UI.
type Options struct {
	// Clock gives the time running jobs' durations are measured to.
	Clock clock.PassiveClock
	// Refresh is how often pages reload while the application runs
	// (default 5 s); negative never.
	Refresh time.Duration
	// Version is drover's version, shown and reported as appSparkVersion.
	Version string
	// AttemptID is the driver's attempt (events.AppStart.AttemptID), which
	// the API reports as its attempt's attemptId; "" for a driver that
	// cannot restart, whose attempt has none, as in Spark.
	AttemptID string
	// ObjectStore is what kept logs on s3:// (spark.driver.log.dfsDir) are
	// read with: the driver's own settings, or drover history's --conf.
	// Nil: the application's configuration without its credentials, which
	// it carries redacted (the AWS SDK's default chain then).
	ObjectStore *objstore.Config
	// KeptLogDirs, when not nil (the history server), are the only
	// directories kept logs are read from: an event log names its
	// application's directory, and whoever can write event logs must not
	// point the server's credentials at another bucket or path.
	KeptLogDirs []string
	// BasePath is where a server that mounts the UI serves its pages (the
	// history server: /history/<appId>/<attemptId>), for the links the
	// REST API gives (executorLogs). Links in pages are from the root: the
	// server that mounts the UI rewrites them.
	BasePath string
	Logger   *slog.Logger
}

// UI is the web UI and REST API of one application's Store.
type UI struct {
	store *appstate.Store
	opts  Options
	mux   *http.ServeMux
	pages map[string]*template.Template
	// sinks are the kept logs' directories opened, by directory.
	sinksMu sync.Mutex
	sinks   map[string]keptlog.Sink
}

// The pages, each a template beside layout.html.
var pageNames = []string{"jobs", "job", "stages", "stage", "executors", "allocation", "environment"}

// New returns the UI of store.
func New(store *appstate.Store, opts Options) *UI {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Refresh == 0 {
		opts.Refresh = 5 * time.Second
	}
	if opts.Version == "" {
		opts.Version = "(devel)"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	u := &UI{store: store, opts: opts, mux: http.NewServeMux(), pages: map[string]*template.Template{}}
	for _, name := range pageNames {
		u.pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html"))
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		panic(err) // the embedded directory is there by construction
	}
	u.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	u.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/jobs/", http.StatusFound)
	})
	u.mux.HandleFunc("GET /jobs/{$}", u.jobsPage)
	u.mux.HandleFunc("GET /jobs/job/{$}", u.jobPage)
	u.mux.HandleFunc("GET /stages/{$}", u.stagesPage)
	u.mux.HandleFunc("GET /stages/stage/{$}", u.stagePage)
	u.mux.HandleFunc("GET /executors/{$}", u.executorsPage)
	u.mux.HandleFunc("GET /allocation/{$}", u.allocationPage)
	u.mux.HandleFunc("GET /environment/{$}", u.environmentPage)
	u.mux.HandleFunc("GET "+KeptLogPath+"{id}", u.keptLogPage)
	u.routeAPI()
	return u
}

// ServeHTTP serves the pages, the API, and what Handle added.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) { u.mux.ServeHTTP(w, r) }

// Handle mounts another handler on the UI's port, such as /metrics; a
// pattern that clashes with the UI's own panics, as http.ServeMux does.
func (u *UI) Handle(pattern string, h http.Handler) { u.mux.Handle(pattern, h) }

// view is what every page template gets.
type view struct {
	Title string
	// Tab is the nav entry to highlight.
	Tab     string
	App     appstate.App
	Status  string
	Refresh int // seconds; 0: no reload
	Now     time.Time
	Version string
	Data    any
}

// render writes page name with data; a template error is a 500, logged.
func (u *UI) render(w http.ResponseWriter, name, title, tab string, data any) {
	app := u.store.App()
	v := view{Title: title, Tab: tab, App: app, Status: appStatus(app), Now: u.opts.Clock.Now(), Version: u.opts.Version, Data: data}
	if !app.Ended && u.opts.Refresh > 0 {
		v.Refresh = max(1, int(u.opts.Refresh.Seconds()))
	}
	var b bytes.Buffer
	if err := u.pages[name].ExecuteTemplate(&b, "layout", v); err != nil {
		u.opts.Logger.Error("rendering a web UI page", "page", name, "err", err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

func appStatus(a appstate.App) string {
	switch {
	case a.ID == "":
		return "starting"
	case !a.Ended:
		return "running"
	case a.Err != "":
		return "failed"
	}
	return "succeeded"
}

// until is the end of a span that may still run: end, else the app's end,
// else now.
func (u *UI) until(end time.Time, app appstate.App) time.Time {
	switch {
	case !end.IsZero():
		return end
	case app.Ended:
		return app.End
	}
	return u.opts.Clock.Now()
}

// span is the duration from start to end (or until now); 0 before start.
func (u *UI) span(start, end time.Time, app appstate.App) time.Duration {
	if start.IsZero() {
		return 0
	}
	return max(0, u.until(end, app).Sub(start))
}

// Jobs page.

type jobRow struct {
	appstate.Job
	Duration time.Duration
}

type jobsData struct {
	Uptime                    time.Duration
	Active, Completed, Failed []jobRow
}

func (u *UI) jobsPage(w http.ResponseWriter, _ *http.Request) {
	app := u.store.App()
	d := jobsData{Uptime: u.span(app.Start, app.End, app)}
	for _, j := range u.store.Jobs() {
		row := jobRow{Job: j, Duration: u.span(j.Submitted, j.Completed, app)}
		switch j.Status {
		case appstate.JobRunning:
			d.Active = append(d.Active, row)
		case appstate.JobSucceeded:
			d.Completed = append(d.Completed, row)
		default:
			d.Failed = append(d.Failed, row)
		}
	}
	u.render(w, "jobs", "Jobs", "jobs", d)
}

type stageRow struct {
	appstate.Stage
	Duration time.Duration
}

type jobData struct {
	jobRow
	Stages []stageRow
}

func (u *UI) jobPage(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
	if err != nil {
		http.Error(w, "missing or bad job id: want /jobs/job/?id=N", http.StatusBadRequest)
		return
	}
	j, ok := u.store.Job(id)
	if !ok {
		http.Error(w, fmt.Sprintf("job %d is unknown or forgotten (spark.ui.retainedJobs)", id), http.StatusNotFound)
		return
	}
	app := u.store.App()
	d := jobData{jobRow: jobRow{Job: j, Duration: u.span(j.Submitted, j.Completed, app)}}
	for _, st := range u.store.Stages() {
		if st.JobID == id {
			d.Stages = append(d.Stages, stageRow{Stage: st, Duration: u.span(st.Submitted, st.Completed, app)})
		}
	}
	u.render(w, "job", fmt.Sprintf("Job %d", id), "jobs", d)
}

// Stages pages.

type stagesData struct {
	Active, Completed, Failed []stageRow
}

func (u *UI) stagesPage(w http.ResponseWriter, _ *http.Request) {
	app := u.store.App()
	var d stagesData
	for _, st := range u.store.Stages() {
		row := stageRow{Stage: st, Duration: u.span(st.Submitted, st.Completed, app)}
		switch st.Status {
		case appstate.StageActive:
			d.Active = append(d.Active, row)
		case appstate.StageComplete:
			d.Completed = append(d.Completed, row)
		default:
			d.Failed = append(d.Failed, row)
		}
	}
	u.render(w, "stages", "Stages", "stages", d)
}

// maxTaskRows bounds the task table of a stage page.
const maxTaskRows = 1000

type summaryRow struct {
	Name   string
	Values []string
}

type stageData struct {
	stageRow
	Quantiles  []string
	Summary    []summaryRow
	SummaryOf  int
	Failures   []appstate.Task
	Tasks      []appstate.Task
	TasksShown int
	TasksKnown int
	Forgotten  int
}

func (u *UI) stagePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id, err1 := strconv.Atoi(q.Get("id"))
	attempt, err2 := strconv.Atoi(cmpOr(q.Get("attempt"), "0"))
	if err1 != nil || err2 != nil {
		http.Error(w, "missing or bad stage id: want /stages/stage/?id=N&attempt=M", http.StatusBadRequest)
		return
	}
	// The latest tasks first: those are the ones that move.
	st, sum, ok := u.store.StageTasks(id, attempt,
		appstate.TaskQuery{Order: appstate.ByIDDesc, Length: maxTaskRows, Quantiles: appstate.PageQuantiles})
	if !ok {
		http.Error(w, fmt.Sprintf("stage %d attempt %d is unknown or forgotten (spark.ui.retainedStages)", id, attempt), http.StatusNotFound)
		return
	}
	app := u.store.App()
	d := stageData{stageRow: stageRow{Stage: st.Stage, Duration: u.span(st.Submitted, st.Completed, app)},
		Failures: st.Failures, Tasks: st.Tasks, TasksShown: len(st.Tasks), TasksKnown: st.Remembered, Forgotten: st.ForgottenTasks}
	d.SummaryOf = sum.Tasks
	d.Quantiles = []string{"Min", "25th percentile", "Median", "75th percentile", "Max"}
	if sum.Tasks > 0 {
		row := func(name string, xs []float64, f func(float64) string) {
			vals := make([]string, len(xs))
			for i, x := range xs {
				vals[i] = f(x)
			}
			d.Summary = append(d.Summary, summaryRow{name, vals})
		}
		bytesf := func(f float64) string { return formatBytes(int64(f)) }
		row("Duration", sum.Duration, formatMillis)
		row("Input Size", sum.InputBytes, bytesf)
		row("Output Size", sum.OutputBytes, bytesf)
		row("Shuffle Read Size", sum.ShuffleReadBytes, bytesf)
		row("Shuffle Read Records", sum.ShuffleReadRecs, func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) })
		row("Shuffle Write Size", sum.ShuffleWriteBytes, bytesf)
		row("Shuffle Write Records", sum.ShuffleWriteRecs, func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) })
		row("Spill (Disk)", sum.SpillBytes, bytesf)
	}
	u.render(w, "stage", fmt.Sprintf("Stage %d (attempt %d)", id, attempt), "stages", d)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Executors page.

type executorRow struct {
	appstate.Executor
	LogURL string
}

// executorTotals sums a group of executors, as the rows of Spark's
// summary table.
type executorTotals struct {
	Name                                                       string
	Executors, Cores, ActiveTasks, FailedTasks, CompletedTasks int
	TaskTime                                                   time.Duration
	ShuffleRead, ShuffleWrite                                  int64
}

func (t *executorTotals) add(x appstate.Executor) {
	t.Executors++
	t.Cores += x.Cores
	t.ActiveTasks += x.ActiveTasks
	t.FailedTasks += x.FailedTasks
	t.CompletedTasks += x.CompletedTasks
	t.TaskTime += x.TaskTime
	t.ShuffleRead += x.ShuffleRead
	t.ShuffleWrite += x.ShuffleWrite
}

type executorsData struct {
	Rows []executorRow
	// Summary is Active, Pending, Dead and Total.
	Summary     []executorTotals
	LogTemplate string
	// KeptDirs are where the processes keep their logs, when they do.
	KeptDirs []string
}

func (u *UI) executorsPage(w http.ResponseWriter, _ *http.Request) {
	links := u.logLinks()
	d := executorsData{LogTemplate: links.template,
		Summary: []executorTotals{{Name: appstate.ExecutorActive}, {Name: appstate.ExecutorPending}, {Name: appstate.ExecutorDead}, {Name: "Total"}}}
	if k := links.kept; k.dir(executorid.Driver) != "" {
		d.KeptDirs = slices.Compact([]string{k.dirs.DriverDir, k.dirs.ExecutorDir})
		d.KeptDirs = slices.DeleteFunc(d.KeptDirs, func(s string) bool { return s == "" })
	}
	for _, x := range u.store.Executors() {
		d.Rows = append(d.Rows, executorRow{Executor: x, LogURL: links.link(x)})
		for i := range d.Summary[:3] {
			if d.Summary[i].Name == x.State {
				d.Summary[i].add(x)
			}
		}
		d.Summary[3].add(x)
	}
	u.render(w, "executors", "Executors", "executors", d)
}

// Allocation page.

type allocationData struct {
	appstate.Allocation
	Master string
}

func (u *UI) allocationPage(w http.ResponseWriter, _ *http.Request) {
	u.render(w, "allocation", "Allocation", "allocation", allocationData{Allocation: u.store.Allocation(), Master: u.store.App().Master})
}

// Environment page.

type environmentData struct {
	Runtime    []appstate.Property
	Properties []appstate.Property
}

func (u *UI) environmentPage(w http.ResponseWriter, _ *http.Request) {
	app := u.store.App()
	d := environmentData{
		Runtime: []appstate.Property{
			{Key: "drover version", Value: u.opts.Version},
			{Key: "Go version", Value: runtime.Version()},
			{Key: "Application id", Value: app.ID},
			{Key: "Master", Value: app.Master},
			{Key: "Deploy mode", Value: app.DeployMode},
			{Key: "Driver host", Value: app.DriverHost},
			{Key: "User", Value: app.User},
		},
		Properties: u.store.Conf(),
	}
	u.render(w, "environment", "Environment", "environment", d)
}
