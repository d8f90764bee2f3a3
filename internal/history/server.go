package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/ui"
)

// DefaultUpdateInterval is how often the directory is read again at most,
// as Spark's spark.history.fs.update.interval.
const DefaultUpdateInterval = 10 * time.Second

// forcedRescanInterval is how long after a scan a request for an unknown
// application may force another: each lists the directory, an S3 LIST on
// s3://, and anyone who reaches the server can name ids that do not exist.
// With it no two scans are less than 5 s apart, so requests cause at most
// 12 LISTs a minute, and a log just written is still found soon.
const forcedRescanInterval = 5 * time.Second

// Options configure a Server.
type Options struct {
	// Dir is the event log directory (spark.eventLog.dir): local, a file:
	// URI, or an s3:// prefix read with Store.
	Dir   string
	Store *objstore.Store
	// KeptLogStore is what the applications' kept logs on s3://
	// (spark.driver.log.dfsDir) are read with: drover history's own
	// settings, as Store. Nil: each application's settings without its
	// credentials (the AWS SDK's default chain).
	KeptLogStore *objstore.Config
	// KeptLogDirs are the only directories the applications' kept logs
	// are read from (ui.Options.KeptLogDirs); none when empty.
	KeptLogDirs []string
	// UpdateInterval is DefaultUpdateInterval when 0.
	UpdateInterval time.Duration
	// Version is drover's, shown by the pages and the API.
	Version string
	Clock   clock.PassiveClock
	Logger  *slog.Logger
}

// Server serves the applications of a directory of event logs.
type Server struct {
	opts Options
	mux  *http.ServeMux

	// loading serializes scans, which replay logs outside mu.
	loading sync.Mutex
	mu      sync.RWMutex
	apps    map[string]*application // by application id
	order   []*application          // the most recently written first
	// scanned is when the last scan was claimed: it began then, or soon
	// will.
	scanned time.Time
}

// app is one attempt of an application, read from its log.
type app struct {
	id string
	// attempt is the attempt's id (events.AppStart.AttemptID), "" for the
	// one log of a driver that cannot restart.
	attempt string
	log     eventlog.Log
	store   *appstate.Store
	ui      *ui.UI
	// stats are what the replay read; err why it stopped early.
	stats eventlog.Stats
	err   error
}

// New reads the logs in opts.Dir and returns their server.
func New(opts Options) (*Server, error) {
	if opts.UpdateInterval <= 0 {
		opts.UpdateInterval = DefaultUpdateInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), apps: map[string]*application{}, scanned: opts.Clock.Now()}
	if err := s.scan(); err != nil {
		return nil, err
	}
	s.mux.HandleFunc("GET /{$}", s.listPage)
	s.mux.HandleFunc("GET /api/v1/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]string{"spark": s.opts.Version})
	})
	s.mux.HandleFunc("GET /api/v1/applications", s.apiApplications)
	s.mux.HandleFunc("GET /api/v1/applications/{appId}", s.apiApp)
	s.mux.HandleFunc("GET /api/v1/applications/{appId}/", s.apiApp)
	s.mux.HandleFunc("GET /history/{appId}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/history/"+url.PathEscape(r.PathValue("appId"))+"/jobs/", http.StatusFound)
	})
	s.mux.HandleFunc("GET /history/{appId}/", s.appPage)
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Apps is the number of applications found (an application with several
// attempts is one).
func (s *Server) Apps() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.order)
}

// refresh scans the directory again when the last scan began at least the
// update interval ago or, when force is set (an application not found), at
// least forcedRescanInterval ago. The request that finds a scan due claims
// it under mu, failed or not: the others answer from the last scan
// meanwhile, so neither a burst of requests nor a store that keeps failing
// makes a LIST per request.
func (s *Server) refresh(force bool) {
	s.mu.Lock()
	since := s.opts.Clock.Since(s.scanned)
	due := since >= s.opts.UpdateInterval || force && since >= forcedRescanInterval
	if due {
		s.scanned = s.opts.Clock.Now()
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if err := s.scan(); err != nil {
		s.opts.Logger.Warn("history: reading the event log directory", "dir", s.opts.Dir, "err", err)
	}
}

// scan lists the logs and replays those that are new or changed since
// they were read.
func (s *Server) scan() error {
	s.loading.Lock()
	defer s.loading.Unlock()
	logs, err := eventlog.List(context.Background(), s.opts.Dir, s.opts.Store)
	if err != nil {
		return err
	}
	s.opts.Logger.Debug("history: listed the event log directory", "dir", s.opts.Dir, "logs", len(logs))
	s.mu.RLock()
	loaded := make(map[string]*app, len(s.order))
	for _, p := range s.order {
		for _, a := range p.attempts {
			loaded[a.log.Path] = a
		}
	}
	s.mu.RUnlock()
	apps := map[string]*application{}
	var order []*application
	for _, l := range logs {
		a := loaded[l.Path]
		if a == nil || a.log.Size != l.Size || !a.log.Modified.Equal(l.Modified) {
			a = s.load(l)
		}
		if a == nil {
			continue
		}
		p := apps[a.id]
		if p == nil {
			p = &application{id: a.id}
			apps[a.id] = p
			order = append(order, p)
		}
		// Two logs of one attempt (written with and without rolling): the
		// newer one, listed first, wins.
		if p.attempt(a.attempt) != nil {
			continue
		}
		p.attempts = append(p.attempts, a)
	}
	for _, p := range order {
		p.sort()
	}
	s.mu.Lock()
	s.apps, s.order = apps, order
	s.mu.Unlock()
	return nil
}

// load replays one log into a new store. A log that cannot be read to
// its end still shows what was read, and the error is logged. A log whose
// application id is not one drover makes (eventlog.CheckAppID) is not
// served: the id goes into paths and links, and whoever wrote the log
// chose it.
func (s *Server) load(l eventlog.Log) *app {
	store := appstate.New(appstate.DefaultOptions())
	var attempt string
	st, err := eventlog.Replay(context.Background(), l, func(e events.Event) {
		if start, ok := e.(*events.AppStart); ok {
			attempt = start.AttemptID
		}
		store.Handle(e)
	})
	a := &app{id: store.App().ID, attempt: attempt, log: l, store: store, stats: st, err: err}
	if a.id == "" {
		a.id = l.AppID // a log without its AppStart
	}
	if err := eventlog.CheckAppID(a.id); err != nil {
		s.opts.Logger.Warn("history: an event log is not served", "path", l.Path, "err", err)
		return nil
	}
	// The attempt id goes into paths and links as the application's does.
	if a.attempt != "" {
		if err := eventlog.CheckAppID(a.attempt); err != nil {
			s.opts.Logger.Warn("history: an event log is not served", "path", l.Path, "err", fmt.Errorf("attempt id: %w", err))
			return nil
		}
	}
	switch {
	case err != nil:
		s.opts.Logger.Warn("history: an event log could not be read to its end", "path", l.Path, "events", st.Events, "err", err)
	case st.Truncated && !l.InProgress:
		s.opts.Logger.Warn("history: a finished event log is cut short", "path", l.Path)
	}
	// The REST API's links (executorLogs) lead to the attempt's pages.
	base := "/history/" + url.PathEscape(a.id)
	if a.attempt != "" {
		base += "/" + url.PathEscape(a.attempt)
	}
	// Durations of an application that never ended run to its log's
	// last write, not to now: its driver may be long gone.
	a.ui = ui.New(store, ui.Options{Clock: frozenClock(l.Modified), Version: s.opts.Version, Logger: s.opts.Logger,
		Refresh: s.opts.UpdateInterval, AttemptID: a.attempt, ObjectStore: s.opts.KeptLogStore, KeptLogDirs: keptLogDirs(s.opts.KeptLogDirs), BasePath: base})
	return a
}

// find is the application id names, reading the directory again when it
// is unknown or the last scan is old.
func (s *Server) find(id string) *application {
	if eventlog.CheckAppID(id) != nil {
		return nil // no log of it is served: no scan can find it
	}
	s.refresh(false)
	s.mu.RLock()
	a := s.apps[id]
	s.mu.RUnlock()
	if a == nil {
		s.refresh(true)
		s.mu.RLock()
		a = s.apps[id]
		s.mu.RUnlock()
	}
	return a
}

func (s *Server) list() []*application {
	s.refresh(false)
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.order
}

// apiApp hands a request of /api/v1/applications/<appId>/… to the
// application's own UI, whose API answers at the same paths: its newest
// attempt's, or with /api/v1/applications/<appId>/<attemptId>/… (Spark's
// paths for an attempt) that attempt's. /api/v1/applications/<appId> of an
// application with several attempts lists them all, and
// /api/v1/applications/<appId>/<attemptId> is the one attempt, as in
// Spark.
func (s *Server) apiApp(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("appId")
	p := s.find(id)
	if p == nil {
		unknownApp(w, id)
		return
	}
	base := "/api/v1/applications/" + id
	a, rest, chosen := p.pick(strings.TrimPrefix(r.URL.Path, base))
	switch {
	case !chosen && rest == "" && len(p.attempts) > 1:
		info, _ := p.info()
		if info == nil {
			http.Error(w, "unknown app: "+id, http.StatusNotFound)
			return
		}
		writeJSON(w, info)
	case chosen && (rest == "" || rest == "/"):
		info := a.attemptInfo()
		if info == nil {
			http.Error(w, "unknown app: "+id, http.StatusNotFound)
			return
		}
		writeJSON(w, info)
	case chosen:
		inner := r.Clone(r.Context())
		inner.URL.Path, inner.URL.RawPath = base+rest, ""
		a.ui.ServeHTTP(w, inner)
	default:
		a.ui.ServeHTTP(w, r)
	}
}

// unknownApp answers a request for an application not served. It names
// the id only when one could be served: any other is the requester's text,
// which plain text with nosniff keeps inert but a reply need not repeat.
func unknownApp(w http.ResponseWriter, id string) {
	if eventlog.CheckAppID(id) != nil {
		http.Error(w, "unknown app: no application id has those characters", http.StatusNotFound)
		return
	}
	http.Error(w, "unknown app: "+id, http.StatusNotFound)
}

// recorder keeps a response to rewrite it.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }

// apiApplications lists the applications as Spark's
// /api/v1/applications does, each as its own UI describes it; ?status=
// (completed or running) and ?limit= filter the list.
func (s *Server) apiApplications(w http.ResponseWriter, r *http.Request) {
	status := strings.ToLower(r.URL.Query().Get("status"))
	if status != "" && status != "completed" && status != "running" {
		http.Error(w, fmt.Sprintf("unknown status %q: want completed or running", status), http.StatusBadRequest)
		return
	}
	limit := -1
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			http.Error(w, fmt.Sprintf("bad limit %q", v), http.StatusBadRequest)
			return
		}
		limit = n
	}
	out := []json.RawMessage{}
	for _, p := range s.list() {
		if limit >= 0 && len(out) >= limit {
			break
		}
		info, ended := p.info()
		if info == nil || (status == "completed" && !ended) || (status == "running" && ended) {
			continue
		}
		out = append(out, info)
	}
	writeJSON(w, out)
}

// info is the application's entry of /api/v1/applications, as its UI
// writes it, and whether it ended.
func (a *app) info() (json.RawMessage, bool) {
	req, err := http.NewRequest(http.MethodGet, "/api/v1/applications/"+a.id, nil)
	if err != nil {
		return nil, false
	}
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	a.ui.ServeHTTP(rec, req)
	if rec.code != http.StatusOK {
		return nil, false
	}
	var ended struct {
		Attempts []struct{ Completed bool }
	}
	if err := json.Unmarshal(rec.body.Bytes(), &ended); err != nil {
		return nil, false
	}
	return json.RawMessage(bytes.TrimSpace(rec.body.Bytes())), len(ended.Attempts) > 0 && ended.Attempts[0].Completed
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

// frozenClock is a clock stopped at one time.
type frozenClock time.Time

func (c frozenClock) Now() time.Time                  { return time.Time(c) }
func (c frozenClock) Since(t time.Time) time.Duration { return time.Time(c).Sub(t) }

// appRow is a line of the list page: an attempt of an application.
type appRow struct {
	ID, Attempt, Name, User, Status, Log string
	Start, End, Updated                  time.Time
	Duration                             time.Duration
	Events                               int
	Problem                              string
}

func (a *app) row() appRow {
	info := a.store.App()
	r := appRow{ID: a.id, Attempt: a.attempt, Name: info.Name, User: info.User, Log: a.log.Path, Start: info.Start, Updated: a.log.Modified,
		Events: a.stats.Events}
	switch {
	case info.Ended && info.Err != "":
		r.Status, r.End = "failed", info.End
	case info.Ended:
		r.Status, r.End = "succeeded", info.End
	case a.log.InProgress:
		r.Status = "incomplete"
	}
	if !r.End.IsZero() && !r.Start.IsZero() {
		r.Duration = r.End.Sub(r.Start)
	}
	switch {
	case a.err != nil:
		r.Problem = "read in part: " + a.err.Error()
	case a.stats.Truncated && !a.log.InProgress:
		r.Problem = "its end was cut short"
	}
	return r
}

// keptLogDirs is never nil: the history server reads kept logs only from
// the directories it was given, none when it was given none.
func keptLogDirs(dirs []string) []string {
	if dirs == nil {
		return []string{}
	}
	return dirs
}
