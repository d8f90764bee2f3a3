package settings

import (
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/eventlog"
)

// EventLog is the event log's options from spark.eventLog.*, and whether
// it is enabled; the caller adds the store, clock and logger.
func EventLog(c *config.Conf, appID string) (eventlog.Options, bool) {
	o := eventlog.Options{
		Dir:         config.EventLogDir.Get(c),
		AppID:       appID,
		Rolling:     config.EventLogRolling.Get(c),
		MaxFileSize: config.EventLogRollingMaxFileSize.Get(c),
		Overwrite:   config.EventLogOverwrite.Get(c),
	}
	if config.EventLogCompress.Get(c) {
		o.Codec = config.EventLogCompressionCodec.Get(c)
	}
	return o, config.EventLogEnabled.Get(c)
}
