package drover

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/k8s"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/metrics"
	"github.com/drover-project/drover/internal/ui"
)

// webUI is the driver's web UI: a state store fed by the event stream and
// the HTTP server of its pages and REST API. A nil *webUI (the UI
// disabled, or its port unavailable) does nothing.
type webUI struct {
	store *appstate.Store
	ui    *ui.UI
	// mux serves the pages (through auth when there is one) and, open,
	// what Handle mounts.
	mux *http.ServeMux
	// auth guards the pages and the API on Kubernetes (uiAuth); nil when
	// they answer everyone. generated: its token was made here, so nobody
	// else holds it.
	auth      *ui.Auth
	generated bool
	srv       *ui.Server
	url       string
	log       *slog.Logger
	// feed is the store's HandleAll; broken is set once it panicked.
	feed   func([]events.Event)
	broken atomic.Bool
}

// consumerLinger is how late the driver's pages, metrics and event log may
// see an event (Spark's live UI updates every 100 ms): they take the
// stream a batch at a time, gathered over this long or until a quarter of
// their queue is full, waking tens of times a second at the scheduler's
// pace instead of once or twice per task; each wake costs the process
// tens of microseconds, which the tasks pay for when the cores are busy.
const consumerLinger = 10 * time.Millisecond

// startUI serves the web UI on spark.ui.port when spark.ui.enabled; its
// store takes the event stream through handle (see statusConsumer), which
// must be subscribed before AppStart is published. It never fails the
// application: a UI that cannot start is logged and left out.
func startUI(conf *config.Conf, log *slog.Logger) *webUI {
	if !config.UIEnabled.Get(conf) {
		return nil
	}
	host, bind := k8s.DriverAddress(conf)
	if bind == "0.0.0.0" {
		bind = "" // every interface, IPv6 too
	}
	ln, err := ui.Listen(bind, config.UIPort.Get(conf), config.PortMaxRetries.Get(conf), log)
	if err != nil {
		log.Warn("the web UI is not served; the application runs without it", "err", err)
		return nil
	}
	w := &webUI{store: appstate.New(appstate.OptionsFromConf(conf)), log: log, mux: http.NewServeMux()}
	w.feed = w.store.HandleAll
	w.ui = ui.New(w.store, ui.Options{Version: droverVersion(), Logger: log})
	w.url = "http://" + net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	w.auth, w.generated = uiAuth(conf, w.url, log)
	var pages http.Handler = w.ui
	if w.auth != nil {
		pages = w.auth.Wrap(w.ui)
	}
	w.mux.Handle("/", pages)
	w.srv = ui.Serve(ln, w.mux, log)
	if w.auth != nil {
		log.Info("Spark UI available at "+w.url+" (it asks for the application's token: drover ui opens it)", "url", w.url)
	} else {
		log.Info("Spark UI available at "+w.url, "url", w.url)
	}
	return w
}

// uiAuth decides who the pages and the API answer. On k8s:// masters they
// listen on the pod network, where any pod reaches them: only requests
// with the application's token (drover.ui.token, which drover submit puts
// in a cluster-mode driver's Secret; else a new one), unless
// drover.ui.requireToken=false. Local masters answer everyone, as before.
func uiAuth(conf *config.Conf, url string, log *slog.Logger) (auth *ui.Auth, generated bool) {
	if m, err := master.Parse(masterOrDefault(conf)); err != nil || m.Kind != master.Kubernetes {
		return nil, false
	}
	if !config.UIRequireToken.Get(conf) {
		log.Warn(config.UIRequireToken.Key()+"=false: the web UI and the REST API answer anyone who reaches "+url+
			", as Spark's do: job names, executor addresses, error messages and the redacted configuration", "url", url)
		return nil, false
	}
	token := config.UIToken.Get(conf)
	if token == "" {
		token, generated = ui.NewToken(), true
	}
	return ui.NewAuth(token), generated
}

// announceLogin tells a client-mode user how to open a UI whose token
// the driver made: a one-time login link on the terminal (never in the
// log, which others may read); elsewhere, how to choose the token.
func (w *webUI) announceLogin(console io.Writer) {
	if w == nil || !w.generated {
		return
	}
	if isTerminal(console) {
		fmt.Fprintf(console, "Spark UI login, a link that works once: %s\n", w.auth.LoginLink(w.url))
		return
	}
	w.log.Info("the web UI asks for a token the driver made and showed nobody (no terminal): set " + config.UIToken.Key() +
		" to reach it with Authorization: Bearer <token>, or " + config.UIRequireToken.Key() + "=false to open it")
}

// handle folds events into the pages' store. A bug in the store must not
// take the driver down with it: after a panic the pages stop updating.
func (w *webUI) handle(evs []events.Event) {
	if w == nil || w.broken.Load() {
		return
	}
	defer func() {
		if r := recover(); r != nil && w.broken.CompareAndSwap(false, true) {
			w.log.Error("the web UI's state store failed; its pages stop updating", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	w.feed(evs)
}

// statusQueue names the consumer of statusConsumer
// (drover_events_dropped_total's label).
const statusQueue = "status"

// statusChunk is how many events statusConsumer hands each of its
// handlers in turn: the next reads them while the one before left them in
// the processor's cache.
const statusChunk = 64

// statusConsumer feeds the metrics, the web UI's store and the event log
// (web and evlog nil when off) from one consumer of the event stream, of
// capacity events. None of them waits for anything but memory (the event
// log hands its bytes to a goroutine of its own, which writes them), so
// none holds the others up, and one goroutine wakes once per batch and
// reads each event for all three while it is in the cache. (The no-op
// task throughput with all three on did not measurably change against a
// consumer each: see docs/benchmarks-notes.md, 26 Nov.) A store that
// panics stops its pages only. The queue is the event log's when it
// is on: deeper than the others', since the log must not lose events.
func statusConsumer(m *metrics.Metrics, web *webUI, evlog *eventlog.Writer) (capacity int, handle func([]events.Event)) {
	handlers := []func([]events.Event){m.HandleAll}
	if web != nil {
		handlers = append(handlers, web.handle)
	}
	if evlog != nil {
		capacity = 10 * events.DefaultCapacity
		handlers = append(handlers, evlog.HandleAll)
	}
	if len(handlers) == 1 {
		return capacity, m.HandleAll
	}
	return capacity, func(evs []events.Event) {
		for len(evs) > 0 {
			n := min(len(evs), statusChunk)
			for _, h := range handlers {
				h(evs[:n])
			}
			evs = evs[n:]
		}
	}
}

// Handle mounts h on the UI's port, beside the pages (Prometheus' /metrics),
// answering without the token: h must show no configuration.
func (w *webUI) Handle(pattern string, h http.Handler) {
	if w != nil {
		w.mux.Handle(pattern, h)
	}
}

// URL is where the UI is served, empty when it is not.
func (w *webUI) URL() string {
	if w == nil {
		return ""
	}
	return w.url
}

// stop closes the server, giving requests in flight a moment.
func (w *webUI) stop() {
	if w == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := w.srv.Stop(ctx); err != nil {
		w.log.Debug("stopping the web UI", "err", err)
	}
}

// droverVersion is the module version the binary was built from.
func droverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
