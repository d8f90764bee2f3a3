package driver

import (
	"context"
	"log/slog"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/settings"
)

// startEventLog starts the event log when spark.eventLog.enabled; the
// status consumer feeds it. A log that cannot be created is reported, and
// the application runs without it, as it does when writing fails later.
func startEventLog(ctx context.Context, conf *config.Conf, appID, attemptID string, log *slog.Logger) *eventlog.Writer {
	opts, enabled := settings.EventLog(conf, appID)
	if !enabled {
		return nil
	}
	opts.AttemptID = attemptID
	if objstore.HasScheme(opts.Dir) {
		opts.Store = objstore.New(settings.ObjectStore(conf))
	}
	opts.Logger = log
	w, err := eventlog.Start(ctx, opts)
	if err != nil {
		log.Error("the application runs without its event log", "err", err)
		return nil
	}
	log.Info("writing the event log", "path", w.Path())
	return w
}
