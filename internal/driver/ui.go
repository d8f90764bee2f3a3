package driver

import (
	"context"
	"fmt"
	"github.com/drover-project/drover/internal/settings"
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
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/master"
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

// startUI serves the web UI on spark.ui.port when spark.ui.enabled; its
// store takes the event stream through handle (see statusConsumer), which
// must be subscribed before AppStart is published. It never fails the
// application: a UI that cannot start is logged and left out.
func startUI(conf *config.Conf, m master.URL, log *slog.Logger) *webUI {
	if !config.UIEnabled.Get(conf) {
		return nil
	}
	host, bind := address(conf, m)
	if bind == "0.0.0.0" {
		bind = "" // every interface, IPv6 too
	}
	ln, err := ui.Listen(bind, config.UIPort.Get(conf), config.PortMaxRetries.Get(conf), log)
	if err != nil {
		log.Warn("the web UI is not served; the application runs without it", "err", err)
		return nil
	}
	w := &webUI{store: appstate.New(settings.UIStore(conf)), log: log, mux: http.NewServeMux()}
	w.feed = w.store.HandleAll
	store := settings.ObjectStore(conf) // the driver's own credentials read its kept logs
	w.ui = ui.New(w.store, ui.Options{Version: droverVersion(), Logger: log, ObjectStore: &store})
	w.url = "http://" + net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	w.auth, w.generated = uiAuth(conf, m, w.url, log)
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
func uiAuth(conf *config.Conf, m master.URL, url string, log *slog.Logger) (auth *ui.Auth, generated bool) {
	if m.Kind != master.Kubernetes {
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

// Handle mounts h on the UI's port, beside the pages (Prometheus' /metrics),
// answering without the token: h must show no configuration.
func (w *webUI) Handle(pattern string, h http.Handler) {
	if w != nil {
		w.mux.Handle(pattern, h)
	}
}

// loginLink is a one-time login link when the UI asks for a token.
func (w *webUI) loginLink() string {
	if w == nil || w.auth == nil {
		return ""
	}
	return w.auth.LoginLink(w.url)
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
