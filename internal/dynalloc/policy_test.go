package dynalloc

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
)

var t0 = time.Unix(1_000_000, 0)

func testConfig() Config {
	return Config{Min: 0, Max: 1000, TasksPerExecutor: 1, Ratio: 1, BacklogTimeout: time.Second,
		SustainedBacklogTimeout: time.Second, IdleTimeout: 60 * time.Second, ShuffleTracking: true,
		ShuffleTimeout: config.Infinite}
}

// ramp steps the policy every 100 ms for d with a constant backlog, the
// executors registering as soon as they are requested, and returns the
// target after every change.
func ramp(cfg Config, pending int, d time.Duration) []string {
	st := NewState(cfg)
	var changes []string
	for now := t0; now.Before(t0.Add(d)); now = now.Add(100 * time.Millisecond) {
		execs := make([]Executor, st.Target)
		for i := range execs {
			execs[i] = Executor{ID: executorid.ID(i + 1)}
		}
		var dec Decision
		st, dec = Step(cfg, st, Input{Now: now, PendingTasks: pending, Executors: execs})
		if dec.Changed {
			changes = append(changes, fmt.Sprintf("%s:%d", now.Sub(t0), dec.Target))
		}
	}
	return changes
}

func TestBacklogRamp(t *testing.T) {
	tests := map[string]struct {
		cfg     func(*Config)
		pending int
		want    []string
	}{
		"doubles every second after the first": {
			pending: 1000,
			want:    []string{"1s:1", "2s:3", "3s:7", "4s:15", "5s:31", "6s:63"},
		},
		"stops at what the backlog needs": {
			pending: 10,
			want:    []string{"1s:1", "2s:3", "3s:7", "4s:10"},
		},
		"maxExecutors caps it": {
			cfg:     func(c *Config) { c.Max = 5 },
			pending: 1000,
			want:    []string{"1s:1", "2s:3", "3s:5"},
		},
		"tasks per executor and ratio": {
			cfg:     func(c *Config) { c.TasksPerExecutor = 4; c.Ratio = 0.5 },
			pending: 40, // 40 tasks × 0.5 / 4 = 5 executors
			want:    []string{"1s:1", "2s:3", "3s:5"},
		},
		"slower sustained timeout": {
			cfg:     func(c *Config) { c.SustainedBacklogTimeout = 2 * time.Second },
			pending: 1000,
			want:    []string{"1s:1", "3s:3", "5s:7"},
		},
		"starts from the initial target": {
			cfg:     func(c *Config) { c.Initial = 4 },
			pending: 1000,
			want:    []string{"1s:5", "2s:7", "3s:11", "4s:19", "5s:35", "6s:67"},
		},
		"no backlog, no change": {
			pending: 0,
			want:    nil,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			if diff := cmp.Diff(tc.want, ramp(cfg, tc.pending, 6*time.Second+50*time.Millisecond)); diff != "" {
				t.Errorf("target changes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBacklogClearsResetsTheRamp(t *testing.T) {
	cfg := testConfig()
	st := NewState(cfg)
	step := func(at time.Duration, pending, running int) Decision {
		var d Decision
		st, d = Step(cfg, st, Input{Now: t0.Add(at), PendingTasks: pending, Running: running})
		return d
	}
	step(0, 100, 0)
	if d := step(time.Second, 100, 0); d.Target != 1 {
		t.Fatalf("target after 1 s of backlog = %d, want 1", d.Target)
	}
	if d := step(2*time.Second, 100, 0); d.Target != 3 {
		t.Fatalf("target after 2 s = %d, want 3", d.Target)
	}
	// The backlog clears while 3 tasks run: the target follows the need.
	if d := step(2500*time.Millisecond, 0, 3); d.Target != 3 || d.Changed {
		t.Fatalf("target with 3 running = %d (changed %v), want 3 unchanged", d.Target, d.Changed)
	}
	if d := step(2600*time.Millisecond, 0, 1); d.Target != 1 || !d.Changed || d.Reason == "" {
		t.Fatalf("target with 1 running = %+v, want 1 with a reason", d)
	}
	// A new backlog waits the backlog timeout again and adds 1 first.
	step(3*time.Second, 50, 1)
	if d := step(3900*time.Millisecond, 50, 1); d.Changed {
		t.Fatalf("target changed before the backlog timeout: %+v", d)
	}
	if d := step(4*time.Second, 50, 1); d.Target != 2 {
		t.Fatalf("target 1 s into the new backlog = %d, want 2", d.Target)
	}
}

func TestInitialTargetHeldUntilWorkArrives(t *testing.T) {
	cfg := testConfig()
	cfg.Initial = 3
	st := NewState(cfg)
	st, d := Step(cfg, st, Input{Now: t0})
	if d.Target != 3 || d.Changed {
		t.Fatalf("initial step = %+v, want target 3 unchanged", d)
	}
	_, d = Step(cfg, st, Input{Now: t0.Add(time.Second), Running: 1})
	if d.Target != 1 || !d.Changed {
		t.Fatalf("with one task running = %+v, want target 1", d)
	}
}

func TestIdleRemoval(t *testing.T) {
	idleAt := t0
	tests := map[string]struct {
		cfg   func(*Config)
		after time.Duration
		execs []Executor
		want  []executorid.ID
	}{
		"idle past the timeout": {
			after: 60 * time.Second,
			execs: []Executor{{ID: 1, IdleSince: idleAt}, {ID: 2, IdleSince: idleAt.Add(time.Second)}, {ID: 3}},
			want:  []executorid.ID{1},
		},
		"all idle long enough, longest first": {
			after: 90 * time.Second,
			execs: []Executor{{ID: 2, IdleSince: idleAt.Add(time.Second)}, {ID: 1, IdleSince: idleAt}},
			want:  []executorid.ID{1, 2},
		},
		"not yet": {
			after: 59 * time.Second,
			execs: []Executor{{ID: 1, IdleSince: idleAt}},
		},
		"minExecutors floor": {
			cfg:   func(c *Config) { c.Min = 2 },
			after: 90 * time.Second,
			execs: []Executor{{ID: 1, IdleSince: idleAt}, {ID: 2, IdleSince: idleAt}, {ID: 3, IdleSince: idleAt}},
			want:  []executorid.ID{1},
		},
		"shuffle data of an active job is kept": {
			after: time.Hour,
			execs: []Executor{{ID: 1, IdleSince: idleAt, ActiveShuffle: true, Shuffle: true}},
		},
		"inactive shuffle data waits the shuffle timeout": {
			cfg:   func(c *Config) { c.ShuffleTimeout = 2 * time.Minute },
			after: 90 * time.Second,
			execs: []Executor{{ID: 1, IdleSince: idleAt, Shuffle: true}, {ID: 2, IdleSince: idleAt}},
			want:  []executorid.ID{2},
		},
		"without shuffle tracking shuffle data does not matter": {
			cfg:   func(c *Config) { c.ShuffleTracking = false },
			after: 60 * time.Second,
			execs: []Executor{{ID: 1, IdleSince: idleAt, ActiveShuffle: true, Shuffle: true}},
			want:  []executorid.ID{1},
		},
		"already being removed": {
			after: 90 * time.Second,
			execs: []Executor{{ID: 1, IdleSince: idleAt, PendingRemoval: true}, {ID: 2, IdleSince: idleAt}},
			want:  []executorid.ID{2},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			st := NewState(cfg)
			st.Initializing = false
			st.Target = 0
			_, d := Step(cfg, st, Input{Now: idleAt.Add(tc.after), Executors: tc.execs})
			if diff := cmp.Diff(tc.want, d.Remove); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIdleRemovalKeepsTheTarget(t *testing.T) {
	cfg := testConfig()
	st := State{Target: 2, NumToAdd: 1}
	execs := []Executor{{ID: 1, IdleSince: t0}, {ID: 2, IdleSince: t0}, {ID: 3, IdleSince: t0}}
	// Two tasks still run somewhere: the target stays 2, one executor goes.
	_, d := Step(cfg, st, Input{Now: t0.Add(time.Hour), Running: 2, Executors: execs})
	if diff := cmp.Diff([]executorid.ID{1}, d.Remove); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
}
