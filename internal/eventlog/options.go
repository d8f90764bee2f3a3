package eventlog

import (
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/objstore"
)

// DefaultFlushInterval is how often a Writer writes out the events it
// buffered, so a running application's log is never far behind.
const DefaultFlushInterval = time.Second

// Options configure a Writer.
type Options struct {
	// Dir is spark.eventLog.dir: a local path, a file: URI or an s3://
	// prefix.
	Dir   string
	AppID string
	// AttemptID is the driver's attempt (events.AppStart.AttemptID), ""
	// for a driver that cannot restart. An attempt's log is named as
	// Spark names one, <appId>_<attemptId>, so that the log of a driver
	// restarted in its pod neither replaces nor extends an earlier
	// attempt's.
	AttemptID string
	// Codec compresses the files: one of Codecs, or "" for none.
	Codec string
	// Rolling writes a directory of files of at most MaxFileSize bytes of
	// events each (before compression).
	Rolling     bool
	MaxFileSize int64
	// Overwrite replaces a log of the same application id.
	Overwrite bool
	// FlushInterval is DefaultFlushInterval when 0.
	FlushInterval time.Duration
	// Store is the object-store client of an s3:// Dir.
	Store  *objstore.Store
	Clock  clock.WithTicker
	Logger *slog.Logger
}
