package dynalloc

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
)

// Config is the dynamic allocation policy's configuration
// (spark.dynamicAllocation.*).
type Config struct {
	Min, Max, Initial int
	// TasksPerExecutor is spark.executor.cores / spark.task.cpus.
	TasksPerExecutor int
	// Ratio is executorAllocationRatio: the fraction of the executors the
	// backlog needs that are requested.
	Ratio                   float64
	BacklogTimeout          time.Duration
	SustainedBacklogTimeout time.Duration
	IdleTimeout             time.Duration
	// ShuffleTracking keeps executors that hold shuffle data: forever while
	// a job uses it, ShuffleTimeout (config.Infinite: forever) otherwise.
	ShuffleTracking bool
	ShuffleTimeout  time.Duration
}

// State is what the policy remembers between steps.
type State struct {
	Target int
	// NumToAdd is the next step of the ramp: 1, 2, 4, …
	NumToAdd int
	// AddTime is when executors are added next while the backlog lasts;
	// zero without a backlog.
	AddTime time.Time
	// Initializing holds the initial target until the first tasks arrive
	// or an executor times out, so start-up does not shrink it.
	Initializing bool
}

// NewState is the state at start: the initial target.
func NewState(cfg Config) State {
	return State{Target: cfg.Initial, NumToAdd: 1, Initializing: true}
}

// Executor is an executor as the policy sees it.
type Executor struct {
	ID executorid.ID
	// IdleSince is when it last became idle; zero while it runs tasks.
	IdleSince time.Time
	// ActiveShuffle is set when it holds shuffle data of a running job;
	// Shuffle when it holds any shuffle data.
	ActiveShuffle, Shuffle bool
	// PendingRemoval is set once the policy chose to remove it.
	PendingRemoval bool
}

// Input is the application's state at one step.
type Input struct {
	Now                   time.Time
	PendingTasks, Running int
	Executors             []Executor
}

// Decision is what to do after a step.
type Decision struct {
	// Target is the number of executors to request; Changed says whether it
	// differs from the previous step's, and Reason why.
	Target  int
	Changed bool
	Reason  string
	// Remove are the executors to remove because they are idle.
	Remove []executorid.ID
}

// Step is one run of the policy (Spark's ExecutorAllocationManager.schedule,
// every 100 ms): it moves the target with the backlog and picks idle
// executors to remove. It is a pure function of the state and the input.
func Step(cfg Config, st State, in Input) (State, Decision) {
	busy := in.PendingTasks + in.Running
	timedOut := idle(cfg, in)
	if st.Initializing && (busy > 0 || len(timedOut) > 0) {
		st.Initializing = false
	}

	// The backlog clock: executors are added BacklogTimeout after tasks
	// started waiting, then every SustainedBacklogTimeout.
	if in.PendingTasks > 0 {
		if st.AddTime.IsZero() {
			st.AddTime = in.Now.Add(cfg.BacklogTimeout)
		}
	} else {
		st.AddTime, st.NumToAdd = time.Time{}, 1
	}

	d := Decision{Target: st.Target}
	if !st.Initializing {
		maxNeeded := int(math.Ceil(float64(busy) * cfg.Ratio / float64(cfg.TasksPerExecutor)))
		switch {
		case maxNeeded < st.Target:
			target := max(maxNeeded, cfg.Min)
			if target != st.Target {
				d.Reason = fmt.Sprintf("%d tasks need %d executors", busy, maxNeeded)
			}
			st.Target, st.NumToAdd = target, 1
		case !st.AddTime.IsZero() && !in.Now.Before(st.AddTime):
			st, d.Reason = add(cfg, st, in, maxNeeded)
		}
	}
	d.Changed = st.Target != d.Target
	d.Target = st.Target
	if !d.Changed {
		d.Reason = ""
	}

	// Idle executors go, down to the larger of minExecutors and the target.
	alive := 0
	for _, e := range in.Executors {
		if !e.PendingRemoval {
			alive++
		}
	}
	keep := max(cfg.Min, st.Target)
	for _, id := range timedOut {
		if alive <= keep {
			break
		}
		d.Remove = append(d.Remove, id)
		alive--
	}
	return st, d
}

// add grows the target by the ramp's step, as far as the backlog needs.
func add(cfg Config, st State, in Input, maxNeeded int) (State, string) {
	if st.Target >= cfg.Max {
		st.NumToAdd = 1
		return st, ""
	}
	existing := 0
	for _, e := range in.Executors {
		if !e.PendingRemoval {
			existing++
		}
	}
	t := max(st.Target, existing) + st.NumToAdd
	t = min(t, maxNeeded)
	t = min(max(t, cfg.Min), cfg.Max)
	delta := t - st.Target
	if delta <= 0 {
		st.NumToAdd = 1
		return st, ""
	}
	if delta == st.NumToAdd {
		st.NumToAdd *= 2
	} else {
		st.NumToAdd = 1
	}
	reason := fmt.Sprintf("%d tasks waiting: adding %d executors", in.PendingTasks, delta)
	st.Target = t
	st.AddTime = in.Now.Add(cfg.SustainedBacklogTimeout)
	return st, reason
}

// idle returns the executors whose idle timeout has passed, longest idle
// first.
func idle(cfg Config, in Input) []executorid.ID {
	type cand struct {
		id    executorid.ID
		since time.Time
	}
	var out []cand
	for _, e := range in.Executors {
		if e.PendingRemoval || e.IdleSince.IsZero() {
			continue
		}
		timeout := cfg.IdleTimeout
		if cfg.ShuffleTracking {
			if e.ActiveShuffle {
				continue
			}
			if e.Shuffle {
				timeout = cfg.ShuffleTimeout
			}
		}
		if timeout >= config.Infinite {
			continue
		}
		if !in.Now.Before(e.IdleSince.Add(timeout)) {
			out = append(out, cand{e.ID, e.IdleSince})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].since.Equal(out[j].since) {
			return out[i].since.Before(out[j].since)
		}
		return out[i].id < out[j].id
	})
	ids := make([]executorid.ID, len(out))
	for i, c := range out {
		ids[i] = c.id
	}
	return ids
}
