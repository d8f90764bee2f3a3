package progress

import (
	"sync"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/scheduler"
)

// Tracker follows the active stages from the event stream: it is the
// progress bar's source.
type Tracker struct {
	mu     sync.Mutex
	order  []stageKey // active stage attempts, oldest first
	stages map[stageKey]*stageState
	// waiting is what the last allocation round said keeps executors
	// back ("3 waiting for queue admission (queue team-a)").
	waiting string
}

type stageKey struct{ stage, attempt int }

type stageState struct {
	progress scheduler.StageProgress
	done     map[int]bool // partitions with a successful attempt
}

// Handle folds one event in; it is a consumer for events.Bus.Subscribe.
func (t *Tracker) Handle(e events.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stages == nil {
		t.stages = map[stageKey]*stageState{}
	}
	switch e := e.(type) {
	case *events.StageSubmitted:
		k := stageKey{e.StageID, e.Attempt}
		t.order = append(t.order, k)
		t.stages[k] = &stageState{progress: scheduler.StageProgress{StageID: e.StageID, Attempt: e.Attempt, Total: e.NumTasks},
			done: map[int]bool{}}
	case *events.StageCompleted:
		k := stageKey{e.StageID, e.Attempt}
		delete(t.stages, k)
		for i, o := range t.order {
			if o == k {
				t.order = append(t.order[:i], t.order[i+1:]...)
				break
			}
		}
	case *events.AllocationRound:
		t.waiting = e.Waiting
	case *events.TaskStart:
		if s := t.stages[stageKey{e.StageID, e.StageAttempt}]; s != nil {
			s.progress.Running++
		}
	case *events.TaskEnd:
		if s := t.stages[stageKey{e.StageID, e.StageAttempt}]; s != nil {
			if e.Launch.IsZero() { // else its start was never counted
				s.progress.Running--
			}
			if e.State == events.TaskSuccess && !s.done[e.Partition] {
				s.done[e.Partition] = true
				s.progress.Done++
			}
		}
	}
}

// Stages is the progress of the active stages, oldest first.
func (t *Tracker) Stages() []scheduler.StageProgress {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]scheduler.StageProgress, 0, len(t.order))
	for _, k := range t.order {
		out = append(out, t.stages[k].progress)
	}
	return out
}

// Waiting is what keeps executors back, as the last allocation round said
// (a queue, a quota), "" when nothing does.
func (t *Tracker) Waiting() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waiting
}
