package scheduler

import (
	"log/slog"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/executorid"
)

// New returns a scheduler that launches on the backend build returns.
// Backend and scheduler refer to each other, so build is given the
// scheduler being built: it may keep it (to report status updates and
// offers), but must not submit, cancel or report through it before New
// returns. New returns build's error, and no scheduler with it. A nil
// build leaves the scheduler without a backend: only for what is built on
// a scheduler that never launches a task (tests of the DAG's bookkeeping).
func New(opts Options, build func(*Scheduler) (Backend, error)) (*Scheduler, error) {
	if opts.MaxFailures < 1 {
		opts.MaxFailures = 1
	}
	if opts.CPUsPerTask < 1 {
		opts.CPUsPerTask = 1
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	s := &Scheduler{
		opts:       opts,
		nextTaskID: opts.FirstTaskID,
		log:        opts.Logger,
		running:    map[int64]*attempt{},
		byExecutor: map[executorid.ID]map[int64]struct{}{},
	}
	if build == nil {
		return s, nil
	}
	b, err := build(s)
	if err != nil {
		return nil, err
	}
	s.backend = b
	s.plans, _ = b.(PlanKeeper)
	return s, nil
}
