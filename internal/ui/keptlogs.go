package ui

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/settings"
)

// Kept logs (issue 41): with spark.driver.log.persistToDfs.enabled every
// process of the application keeps its log in spark.driver.log.dfsDir (the
// executors' in drover.executor.log.dfsDir) through internal/keptlog. The
// Executors page and the REST API's executorLogs link each process to
// KeptLogPath, where the UI reads its log back from there: while the
// application runs, and in the history server once its pods are gone.

// KeptLogPath is where the UI serves a process's kept log, followed by its
// executor id (a number, or driver): /logs/executor/3?tail=100.
const KeptLogPath = "/logs/executor/"

// keptLogs is where the application keeps its logs, as its configuration
// (the store's) says.
type keptLogs struct {
	appID string
	dirs  settings.KeptLogs
	// err is a setting ReadKeptLogs refuses (a bad scheme): nothing kept.
	err  error
	conf *config.Conf
}

func (u *UI) keptLogs() keptLogs {
	k := keptLogs{appID: u.store.App().ID, conf: config.New()}
	for _, p := range u.store.Conf() {
		k.conf.Set(p.Key, p.Value)
	}
	k.dirs, k.err = settings.ReadKeptLogs(k.conf)
	if k.err == nil && u.opts.KeptLogDirs != nil {
		k.err = allowed(u.opts.KeptLogDirs, k.dirs.DriverDir, k.dirs.ExecutorDir)
	}
	return k
}

// allowed checks that every directory in dirs lies in one of allow.
func allowed(allow []string, dirs ...string) error {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if len(allow) == 0 {
			return fmt.Errorf("this server reads no kept logs: give it their directory, %s, with --conf %s=%s",
				d, config.DriverLogDfsDir.Key(), d)
		}
		if !slices.ContainsFunc(allow, func(a string) bool { return within(d, a) }) {
			return fmt.Errorf("its directory %s is not one this server reads kept logs from (%s; set with --conf %s=DIR)",
				d, strings.Join(allow, ", "), config.DriverLogDfsDir.Key())
		}
	}
	return nil
}

// within reports whether dir is base or lies under it; s3a:// and s3://
// name the same buckets, file:// and a bare path the same directories.
func within(dir, base string) bool {
	norm := func(s string) string {
		s = strings.TrimSpace(s)
		if rest, ok := strings.CutPrefix(s, "s3a://"); ok {
			s = "s3://" + rest
		}
		if rest, ok := strings.CutPrefix(s, "file://"); ok {
			s = rest
		}
		if !strings.Contains(s, "://") {
			s = path.Clean(s)
		}
		return strings.TrimRight(s, "/")
	}
	d, b := norm(dir), norm(base)
	return b != "" && (d == b || strings.HasPrefix(d, b+"/"))
}

// dir is where the process id keeps its log; empty when it keeps none.
func (k keptLogs) dir(id executorid.ID) string {
	if k.appID == "" || k.err != nil {
		return ""
	}
	if id == executorid.Driver {
		return k.dirs.DriverDir
	}
	return k.dirs.ExecutorDir
}

// path is the link to x's kept log from the UI's root; empty when it
// keeps none. An executor that never registered has none: it starts
// keeping its log when it registers.
func (k keptLogs) path(x appstate.Executor) string {
	if x.State == appstate.ExecutorPending || k.dir(x.ID) == "" {
		return ""
	}
	return KeptLogPath + x.ID.String()
}

// objectStore is what the kept logs on s3:// are read with:
// Options.ObjectStore, else the application's own settings without its
// credentials, which its configuration carries redacted (the AWS SDK's
// default chain then).
func (u *UI) objectStore(conf *config.Conf) objstore.Config {
	if u.opts.ObjectStore != nil {
		return *u.opts.ObjectStore
	}
	cfg := settings.ObjectStore(conf)
	for _, s := range []*string{&cfg.AccessKey, &cfg.SecretKey, &cfg.SessionToken} {
		if *s == config.RedactedValue {
			*s = ""
		}
	}
	return cfg
}

// sink is the sink of dir, opened once: an application's directories do
// not change.
func (u *UI) sink(dir string, conf *config.Conf) (keptlog.Sink, error) {
	u.sinksMu.Lock()
	defer u.sinksMu.Unlock()
	if s, ok := u.sinks[dir]; ok {
		return s, nil
	}
	s, err := keptlog.OpenSink(dir, u.objectStore(conf))
	if err != nil {
		return nil, err
	}
	if u.sinks == nil {
		u.sinks = map[string]keptlog.Sink{}
	}
	u.sinks[dir] = s
	return s, nil
}

// keptLogPage serves the kept log of one process as text/plain: every
// attempt of it in order, each after a line naming it when there are
// several; ?attempt=N only that one, ?tail=N the last N lines. A log not
// kept (yet) is a 404, a store that fails a 502, each with the reason on
// one line.
func (u *UI) keptLogPage(w http.ResponseWriter, r *http.Request) {
	id, err := executorid.Parse(r.PathValue("id"))
	if err != nil {
		textError(w, http.StatusBadRequest, err.Error())
		return
	}
	q := r.URL.Query()
	tail, attempt := keptlog.AllLines, 0
	if s := q.Get("tail"); s != "" {
		if tail, err = strconv.Atoi(s); err != nil || tail < 0 {
			textError(w, http.StatusBadRequest, fmt.Sprintf("bad tail %q: want a number of lines", s))
			return
		}
	}
	if s := q.Get("attempt"); s != "" {
		if attempt, err = strconv.Atoi(s); err != nil || attempt < 1 {
			textError(w, http.StatusBadRequest, fmt.Sprintf("bad attempt %q: attempts are numbered from 1", s))
			return
		}
	}
	who := "executor " + id.String()
	if id == executorid.Driver {
		who = "the driver"
	}
	k := u.keptLogs()
	dir := k.dir(id)
	switch {
	case k.appID == "":
		textError(w, http.StatusNotFound, "no log is kept yet: the application has not started")
		return
	case k.err != nil:
		textError(w, http.StatusNotFound, "this application keeps no logs: "+k.err.Error())
		return
	case k.dirs.DriverDir == "":
		textError(w, http.StatusNotFound, "this application keeps no logs ("+config.DriverLogPersistToDfs.Key()+" is not true)")
		return
	case dir == "":
		textError(w, http.StatusNotFound, "this application keeps no executor's log ("+config.ExecutorLogDfsDir.Key()+"="+config.NoExecutorLogs+")")
		return
	}
	sink, err := u.sink(dir, k.conf)
	if err != nil {
		textError(w, http.StatusNotFound, "this application keeps no logs: "+err.Error())
		return
	}
	procs, err := keptlog.Processes(r.Context(), sink, k.appID)
	if err != nil {
		textError(w, http.StatusBadGateway, err.Error())
		return
	}
	procs = slices.DeleteFunc(procs, func(p keptlog.Process) bool {
		return p.Executor != id || attempt != 0 && p.Attempt != attempt
	})
	if len(procs) == 0 {
		what := who
		if attempt != 0 {
			what += fmt.Sprintf(" (attempt %d)", attempt)
		}
		textError(w, http.StatusNotFound, fmt.Sprintf("no log of %s is kept in %s (yet): its process has not started keeping it",
			what, sink.Path(k.appID)))
		return
	}
	parts, err := openKept(r, sink, procs, tail)
	if err != nil {
		code := http.StatusBadGateway
		if errors.Is(err, keptlog.ErrNoLog) {
			code = http.StatusNotFound
		}
		textError(w, code, err.Error())
		return
	}
	writeKept(w, parts)
}

// keptPart is one attempt's log to send.
type keptPart struct {
	p keptlog.Process
	r io.Reader
}

// openKept opens the logs of procs (one process's attempts, in order):
// whole, or with tail >= 0 their last tail lines together, read from the
// last attempt back.
func openKept(r *http.Request, sink keptlog.Sink, procs []keptlog.Process, tail int) ([]keptPart, error) {
	if tail < 0 {
		parts := make([]keptPart, 0, len(procs))
		for _, p := range procs {
			kr, err := keptlog.Open(r.Context(), sink, p, keptlog.ReadOptions{Tail: keptlog.AllLines})
			if err != nil {
				closeKept(parts)
				return nil, err
			}
			parts = append(parts, keptPart{p, kr})
		}
		return parts, nil
	}
	var parts []keptPart
	for i := len(procs) - 1; i >= 0 && tail > 0; i-- {
		kr, err := keptlog.Open(r.Context(), sink, procs[i], keptlog.ReadOptions{Tail: tail})
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(kr)
		kr.Close()
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			continue
		}
		tail -= bytes.Count(b, []byte{'\n'})
		if b[len(b)-1] != '\n' {
			tail--
		}
		parts = append(parts, keptPart{procs[i], bytes.NewReader(b)})
	}
	slices.Reverse(parts)
	return parts, nil
}

// closeKept releases the files the parts' readers hold.
func closeKept(parts []keptPart) {
	for _, p := range parts {
		if c, ok := p.r.(io.Closer); ok {
			c.Close()
		}
	}
}

// writeKept sends the parts as text/plain, each after a line naming its
// attempt when there are several. Once the answer has begun, an error of
// the store can only be told in it: a last line says where it stopped.
func writeKept(w http.ResponseWriter, parts []keptPart) {
	defer closeKept(parts)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	out := &lineWriter{w: w, nl: true}
	for _, part := range parts {
		if len(parts) > 1 {
			out.line(fmt.Sprintf("[drover: %s]", part.p))
		}
		src := &readErr{r: part.r}
		if _, err := io.Copy(out, src); err != nil {
			if src.err != nil {
				out.line(fmt.Sprintf("[drover: the log of %s stops here: %v]", part.p, oneLine(src.err.Error())))
			}
			return
		}
	}
}

// lineWriter remembers whether what it wrote ends a line.
type lineWriter struct {
	w  io.Writer
	nl bool
}

func (l *lineWriter) Write(b []byte) (int, error) {
	n, err := l.w.Write(b)
	if n > 0 {
		l.nl = b[n-1] == '\n'
	}
	return n, err
}

// line writes s on a line of its own.
func (l *lineWriter) line(s string) {
	if !l.nl {
		s = "\n" + s
	}
	l.Write([]byte(s + "\n"))
}

// readErr keeps its reader's error, to tell it from the writer's.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// textError answers code with msg on one line, as plain text.
func textError(w http.ResponseWriter, code int, msg string) {
	http.Error(w, oneLine(msg), code)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
