package commit

import (
	"context"
	"encoding/json"
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
	// Lineage, set when the driver may restart, is the lineage fingerprint
	// of the output (dag.Graph.OutputLineage). _SUCCESS then names it with
	// AppID and Attempt, and an output whose _SUCCESS names this
	// application and lineage, committed by an earlier attempt of the
	// driver, is left as it is (Reused hears of it). The uncommitted
	// output an earlier attempt of this application left in an object
	// store (its _PENDING and parts) is removed and written again.
	Lineage string
	Attempt int64
	// Fence, when set, is asked just before the commit makes the output
	// visible: an error (a newer attempt of the driver runs) stops the
	// commit with ErrSuperseded and cleans nothing up, since the output
	// is the newer attempt's now.
	Fence func(context.Context) error
	// Reused, when set, hears of an output an earlier attempt committed.
	Reused func(dir string)
	// Clock dates the _PENDING marker; the real clock when nil.
	Clock  clock.PassiveClock
	Logger *slog.Logger
}

// ErrSuperseded stops a commit whose driver is no longer the newest
// attempt (Options.Fence).
var ErrSuperseded = errors.New("a newer attempt of the driver runs")

// fence asks Options.Fence whether this attempt may still commit.
func (o Options) fence(ctx context.Context) error {
	if o.Fence == nil {
		return nil
	}
	if err := o.Fence(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrSuperseded, err)
	}
	return nil
}

// successMarker is what _SUCCESS holds when the driver may restart: who
// committed the output and what it is. Hadoop's S3A committers write a
// JSON summary there too; readers only look for the file.
type successMarker struct {
	Committer   string `json:"committer"`
	Application string `json:"application"`
	Attempt     int64  `json:"attempt"`
	Lineage     string `json:"lineage"`
}

// success is _SUCCESS's content: empty, as Hadoop's FileOutputCommitter
// writes it, unless the output has a lineage.
func (o Options) success() []byte {
	if o.Lineage == "" {
		return nil
	}
	b, _ := json.Marshal(successMarker{Committer: "drover", Application: o.AppID, Attempt: o.Attempt, Lineage: o.Lineage})
	return append(b, '\n')
}

// committedBefore reports whether a _SUCCESS holding b marks this output,
// committed by an earlier attempt of this application.
func (o Options) committedBefore(b []byte) bool {
	var m successMarker
	if o.Lineage == "" || json.Unmarshal(b, &m) != nil {
		return false
	}
	return m.Committer == "drover" && m.Application == o.AppID && m.Lineage == o.Lineage
}

// reuse reports an output an earlier attempt committed.
func (o Options) reuse(dir string) {
	o.Logger.Info("output committed by an earlier attempt of the driver: not written again", "output", dir, "lineage", o.Lineage)
	if o.Reused != nil {
		o.Reused(dir)
	}
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
