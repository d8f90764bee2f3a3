package dynalloc

import (
	"context"
	"log/slog"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"k8s.io/utils/clock"
)

// Interval is how often the policy runs, as in Spark.
const Interval = 100 * time.Millisecond

// Tasks is what the policy needs from the task scheduler.
type Tasks interface {
	PendingTasks() int
	RunningTasks() int
	RunningByExecutor() map[executorid.ID]int
}

// Client carries out the decisions: a cluster manager's allocation client.
type Client interface {
	RequestTotalExecutors(total int) error
	KillExecutors(ids []executorid.ID) error
}

// Manager runs the policy every Interval and carries out its decisions.
type Manager struct {
	Config Config
	Tasks  Tasks
	Client Client
	// Executors lists the registered executors.
	Executors func() []executorid.ID
	// Shuffles reports the executors that hold shuffle data of a running
	// job (active) and of any job (held); nil when unknown.
	Shuffles func() (active, held map[executorid.ID]bool)
	// Exclude stops offering tasks to an executor chosen for removal.
	Exclude func(id executorid.ID)
	// Decommission lets a removed executor finish its running tasks before
	// it is killed (spark.decommission.enabled).
	Decommission bool
	Clock        clock.WithTicker
	Logger       *slog.Logger
	Metrics      *Metrics
	// Events, when set, hears of every target change.
	Events *events.Bus

	state     State
	idleSince map[executorid.ID]time.Time
	// removing are the executors chosen for removal, until they leave the
	// executor list; killed those already killed.
	removing map[executorid.ID]bool
	killed   map[executorid.ID]bool
}

// Metrics is what the manager records into: hooks, each optional, which
// internal/metrics fills with the driver's Prometheus collectors
// (metrics.NewDynalloc), so that the policy's package defines none.
type Metrics struct {
	// SetTarget records the executor target.
	SetTarget func(target int)
	// TargetChanged counts a change of the target, by direction: "up" or
	// "down".
	TargetChanged func(direction string)
	// IdleRemoved counts an executor removed because it was idle.
	IdleRemoved func()
}

// The hooks are called through these, which a nil Metrics or hook skips.

func (m *Metrics) setTarget(target int) {
	if m != nil && m.SetTarget != nil {
		m.SetTarget(target)
	}
}

func (m *Metrics) targetChanged(direction string) {
	if m != nil && m.TargetChanged != nil {
		m.TargetChanged(direction)
	}
}

func (m *Metrics) idleRemoved() {
	if m != nil && m.IdleRemoved != nil {
		m.IdleRemoved()
	}
}

// Run runs the policy until ctx is done.
func (m *Manager) Run(ctx context.Context) {
	if m.Clock == nil {
		m.Clock = clock.RealClock{}
	}
	if m.Logger == nil {
		m.Logger = slog.New(slog.DiscardHandler)
	}
	m.state = NewState(m.Config)
	m.idleSince, m.removing, m.killed = map[executorid.ID]time.Time{}, map[executorid.ID]bool{}, map[executorid.ID]bool{}
	m.Metrics.setTarget(m.state.Target)
	t := m.Clock.NewTicker(Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			m.tick(m.Clock.Now())
		}
	}
}

// tick gathers the application's state, runs the policy once and carries
// out its decision.
func (m *Manager) tick(now time.Time) {
	ids := m.Executors()
	running := m.Tasks.RunningByExecutor()
	var active, held map[executorid.ID]bool
	if m.Shuffles != nil {
		active, held = m.Shuffles()
	}
	registered := make(map[executorid.ID]bool, len(ids))
	in := Input{Now: now, PendingTasks: m.Tasks.PendingTasks(), Running: m.Tasks.RunningTasks()}
	for _, id := range ids {
		registered[id] = true
		if running[id] > 0 {
			delete(m.idleSince, id)
		} else if _, ok := m.idleSince[id]; !ok {
			m.idleSince[id] = now
		}
		in.Executors = append(in.Executors, Executor{ID: id, IdleSince: m.idleSince[id],
			ActiveShuffle: active[id], Shuffle: held[id], PendingRemoval: m.removing[id]})
	}
	for id := range m.idleSince {
		if !registered[id] {
			delete(m.idleSince, id)
		}
	}
	for id := range m.removing {
		if !registered[id] {
			delete(m.removing, id)
			delete(m.killed, id)
		}
	}

	prev := m.state
	next, d := Step(m.Config, m.state, in)
	m.state = next
	if d.Changed {
		if err := m.Client.RequestTotalExecutors(d.Target); err != nil {
			m.Logger.Warn("requesting executors failed; keeping the previous target", "target", d.Target, "err", err)
			m.state = prev
		} else {
			m.Logger.Info("executor target changed", "target", d.Target, "previous", prev.Target, "reason", d.Reason)
			m.Events.Publish(&events.TargetChanged{Target: d.Target, Backlog: in.PendingTasks + in.Running, Reason: d.Reason})
			m.Metrics.setTarget(d.Target)
			dir := "up"
			if d.Target < prev.Target {
				dir = "down"
			}
			m.Metrics.targetChanged(dir)
		}
	}
	m.remove(d.Remove, running)
}

// remove takes executors out of service. Each is excluded from new tasks at
// once; it is killed at once, or, with decommissioning, once the tasks it
// runs are done.
func (m *Manager) remove(chosen []executorid.ID, running map[executorid.ID]int) {
	for _, id := range chosen {
		m.removing[id] = true
		if m.Exclude != nil {
			m.Exclude(id)
		}
		m.Logger.Info("removing idle executor", "executor", id, "idle", m.Clock.Since(m.idleSince[id]).Round(time.Millisecond))
		m.Metrics.idleRemoved()
	}
	var kill []executorid.ID
	for id := range m.removing {
		if !m.killed[id] && (!m.Decommission || running[id] == 0) {
			kill = append(kill, id)
		}
	}
	if len(kill) == 0 {
		return
	}
	if err := m.Client.KillExecutors(kill); err != nil {
		m.Logger.Warn("removing executors failed", "executors", kill, "err", err)
		return
	}
	// They stay pending removal until they leave the executor list, so
	// that executors still going do not count as alive (a pod takes
	// seconds to go).
	for _, id := range kill {
		m.killed[id] = true
	}
	// Killing may have lowered the cluster manager's own count; the target
	// stands (SPARK-21834).
	if err := m.Client.RequestTotalExecutors(m.state.Target); err != nil {
		m.Logger.Warn("re-sending the executor target failed", "target", m.state.Target, "err", err)
	}
}
