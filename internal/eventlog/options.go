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
