package drover

import (
	"context"
	"fmt"
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
	"github.com/drover-project/drover/internal/k8s"
	"github.com/drover-project/drover/internal/ui"
)

// webUI is the driver's web UI: a state store fed by the event stream and
// the HTTP server of its pages and REST API. A nil *webUI (the UI
// disabled, or its port unavailable) does nothing.
type webUI struct {
	store *appstate.Store
	ui    *ui.UI
	srv   *ui.Server
	url   string
	log   *slog.Logger
}

// consumerLinger is how late the driver's pages, metrics and event log may
// see an event (Spark's live UI updates every 100 ms): they take the
// stream a batch at a time, gathered over this long or until a quarter of
// their queue is full, waking tens of times a second at the scheduler's
// pace instead of once or twice per task; each wake costs the process
// tens of microseconds, which the tasks pay for when the cores are busy.
const consumerLinger = 10 * time.Millisecond

// startUI serves the web UI on spark.ui.port when spark.ui.enabled, its
// store subscribed to bus; call it before AppStart is published. It never
// fails the application: a UI that cannot start is logged and left out.
func startUI(conf *config.Conf, bus *events.Bus, log *slog.Logger) *webUI {
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
	w := &webUI{store: appstate.New(appstate.OptionsFromConf(conf)), log: log}
	w.ui = ui.New(w.store, ui.Options{Version: droverVersion(), Logger: log})
	var broken atomic.Bool
	bus.SubscribeBatches("ui", 0, consumerLinger, func(evs []events.Event) {
		// A bug in the store must not take the driver down with it.
		defer func() {
			if r := recover(); r != nil && broken.CompareAndSwap(false, true) {
				log.Error("the web UI's state store failed; its pages stop updating", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
		}()
		if !broken.Load() {
			w.store.HandleAll(evs)
		}
	})
	w.srv = ui.Serve(ln, w.ui, log)
	w.url = "http://" + net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	log.Info("Spark UI available at "+w.url, "url", w.url)
	return w
}

// Handle mounts h on the UI's port, beside the pages (Prometheus' /metrics).
func (w *webUI) Handle(pattern string, h http.Handler) {
	if w != nil {
		w.ui.Handle(pattern, h)
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
