package scheduler

import (
	"time"

	"github.com/drover-project/drover/internal/events"
)

// heldStart is an attempt whose TaskStart is held back (StartDelay).
type heldStart struct {
	id int64
	a  *attempt
}

// holdStartLocked holds back the TaskStart of attempt id.
func (s *Scheduler) holdStartLocked(id int64, a *attempt) {
	if s.sectionTime.IsZero() {
		// One clock read per locked section, shared by its launches; in
		// whole microseconds and UTC, as the bus stamps events.
		s.sectionTime = s.opts.Events.Now().Truncate(time.Microsecond).UTC()
		s.now = s.sectionTime
	}
	a.launched = s.sectionTime
	s.held = append(s.held, heldStart{id: id, a: a})
	if s.timer == nil {
		s.timer = s.opts.Clock.AfterFunc(StartDelay, s.timerFired)
	}
}

// timerFired releases the due starts in a goroutine of its own: a fake
// clock calls it while stepping, under its own lock.
func (s *Scheduler) timerFired() { go s.releaseDueStarts() }

// releaseStartsLocked publishes the held starts of attempts launched at
// or before due that are still running, oldest first, and lets go of the
// ones that ended.
func (s *Scheduler) releaseStartsLocked(due time.Time) {
	var starts []events.Event
	for len(s.held) > 0 {
		h := s.held[0]
		if !h.a.launched.IsZero() {
			if h.a.launched.After(due) {
				break
			}
			starts = append(starts, s.startEvent(h))
			h.a.launched = time.Time{}
		}
		s.held[0] = heldStart{}
		s.held = s.held[1:]
	}
	if len(starts) > 0 {
		s.opts.Events.PublishAll(starts)
	}
}

// startEvent is h's TaskStart, at its launch time.
func (s *Scheduler) startEvent(h heldStart) *events.TaskStart {
	a := h.a
	e := s.starts.next()
	*e = events.TaskStart{Header: events.Header{Time: a.launched}, TaskID: h.id, StageID: a.set.spec.StageID,
		StageAttempt: a.set.spec.StageAttempt, Partition: a.set.spec.Tasks[a.index].Partition, Attempt: a.number,
		Executor: a.executor}
	return e
}

// releaseDueStarts is the timer's: it publishes the held starts that are
// due, for when no task launches to do it, and waits for the next.
func (s *Scheduler) releaseDueStarts() {
	s.mu.Lock()
	s.timer = nil
	s.now = s.opts.Events.Now().Truncate(time.Microsecond).UTC()
	// What is left starts with a held start not yet due.
	s.releaseStartsLocked(s.now.Add(-StartDelay))
	if len(s.held) > 0 {
		s.timer = s.opts.Clock.AfterFunc(s.held[0].a.launched.Add(StartDelay).Sub(s.now), s.timerFired)
	}
	s.unlock()
}
