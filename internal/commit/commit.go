package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/objstore"
)

// Run runs the job whose tasks write their partitions as out says, calling
// onResult with each partition's result (what its task wrote).
type Run func(out dataflow.Output, onResult func(p int, b []byte) error) error

// Options configures a commit.
type Options struct {
	// Action starts the commit's errors ("save as text file").
	Action string
	// AppID names the application in an object store's _PENDING marker.
	AppID string
	// Partitions is the number of partitions the job writes.
	Partitions int
	// AtStop, when set, takes a clean-up to run once the application's
	// executors have stopped: task attempts that outlived their job may
	// start uploads after the commit's own sweep.
	AtStop func(func(context.Context))
	// Hook, when set, is called before an object store's commit completes
	// any upload and after each it completes, with how many are complete;
	// an error stops the commit there. ErrKilled stops it without any
	// clean-up, as a killed driver would (tests).
	Hook func(completed int) error
	// Clock dates the _PENDING marker; the real clock when nil.
	Clock  clock.PassiveClock
	Logger *slog.Logger
}

// ErrKilled, returned by Options.Hook, stops a commit as a killed driver
// would: nothing is cleaned up.
var ErrKilled = errors.New("driver killed (test)")

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.AtStop == nil {
		o.AtStop = func(func(context.Context)) {}
	}
	return o
}

// Save runs the job through run and commits its output into dir, a local
// directory or, when store is not nil, an object store's prefix (dir is
// then its URI).
func Save(ctx context.Context, dir string, store *objstore.Store, out dataflow.Output, run Run, opts Options) error {
	opts = opts.withDefaults()
	if store == nil {
		return toDir(dir, out, run, opts)
	}
	if err := toStore(ctx, store, dir, out, run, opts); err != nil {
		return fmt.Errorf("%s: %w", opts.Action, err)
	}
	return nil
}

// SuccessFile marks a committed local output directory, as Hadoop's
// committers do.
const SuccessFile = objstore.SuccessMarker
