package scheduler

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

func (s *Scheduler) forgetLocked(tid int64) *attempt {
	a := s.running[tid]
	if a == nil {
		return nil
	}
	a.set.fetchingBytes -= a.fetching
	a.fetching = 0
	delete(s.running, tid)
	if tasks := s.byExecutor[a.executor]; tasks != nil {
		delete(tasks, tid)
	}
	return a
}

// CanFetchResult is asked before a result kept on an executor (too large for
// the control stream) is fetched, with the size the executor declared. As
// Spark's canFetchMoreResults, a result that would take the task set's
// results over spark.driver.maxResultSize aborts the task set before any
// byte of it is read; a result that fits is reserved until it arrives.
// It reports whether to fetch: false also for a task no longer wanted.
func (s *Scheduler) CanFetchResult(taskID, size int64) bool {
	s.mu.Lock()
	a := s.running[taskID]
	if a == nil || a.set.finished {
		s.unlock()
		return false
	}
	ts := a.set
	var kills []killOrder
	fits := true
	if max := s.opts.MaxResultSize; max > 0 && ts.resultBytes+ts.fetchingBytes+size > max {
		fits = false
		kills = s.abortLocked(ts, fmt.Errorf(
			"total size of results of %d tasks (%d bytes, with a %d-byte result not fetched) is bigger than spark.driver.maxResultSize (%d bytes)",
			ts.numSucceded+1, ts.resultBytes+ts.fetchingBytes+size, size, max))
	} else {
		a.fetching = size
		ts.fetchingBytes += size
	}
	s.unlock()
	s.kill(kills, "task set aborted")
	return fits
}

// StatusUpdates records terminal task reports.
func (s *Scheduler) StatusUpdates(statuses []Status) {
	revive := false
	var kills []killOrder
	s.mu.Lock()
	for i := range statuses {
		st := &statuses[i]
		if st.State == Running {
			continue
		}
		a := s.forgetLocked(st.TaskID)
		if a == nil {
			continue // a late report for an attempt we stopped caring about
		}
		s.taskEnded(st.TaskID, a, st)
		if a.set.finished {
			continue
		}
		ts := a.set
		switch st.State {
		case Finished:
			if ts.succeeded[a.index] {
				continue
			}
			ts.succeeded[a.index] = true
			ts.numSucceded++
			// A moving average over the last tens of tasks: it follows
			// a stage whose tasks change pace, and one odd task barely
			// moves it.
			if d := float64(max(st.Duration, time.Microsecond)); ts.taskNanos == 0 {
				ts.taskNanos = d
			} else {
				ts.taskNanos += (d - ts.taskNanos) / 16
			}
			ts.resultBytes += int64(len(st.Result))
			if max := s.opts.MaxResultSize; max > 0 && ts.resultBytes > max {
				kills = append(kills, s.abortLocked(ts, fmt.Errorf(
					"total size of results of %d tasks (%d bytes) is bigger than spark.driver.maxResultSize (%d bytes)",
					ts.numSucceded, ts.resultBytes, max))...)
				continue
			}
			if ts.spec.OnSuccess != nil {
				ts.spec.OnSuccess(ts.spec.Tasks[a.index].Partition, st.Result)
			}
			if ts.numSucceded == len(ts.spec.Tasks) {
				s.finishLocked(ts, nil)
			}
		case Failed:
			if st.FetchFailed != nil {
				kills = append(kills, s.abortLocked(ts, st.FetchFailed)...)
				continue
			}
			k, r := s.taskFailedLocked(ts, a, st.Err, st.Stack)
			kills = append(kills, k...)
			revive = revive || r
		case Killed:
			// Killed without the scheduler asking (an executor that is
			// leaving refused it): run it elsewhere, not a failure.
			ts.retry = append(ts.retry, a.index)
			revive = true
		}
	}
	s.unlock()
	s.kill(kills, "task set aborted")
	if revive {
		s.backend.ReviveOffers()
	}
}

// taskFailedLocked counts a failure and either requeues the task or aborts
// its task set when the task has failed spark.task.maxFailures times.
func (s *Scheduler) taskFailedLocked(ts *TaskSet, a *attempt, reason, stack string) ([]killOrder, bool) {
	ts.failures[a.index]++
	n := ts.failures[a.index]
	fe := &TaskFailedError{
		StageID:   ts.spec.StageID,
		Partition: ts.spec.Tasks[a.index].Partition,
		Attempts:  n,
		Executor:  a.executor,
		Reason:    reason,
		Stack:     stack,
	}
	ts.lastFailure[a.index] = fe
	s.log.Warn("task failed", "stage", ts.spec.StageID, "partition", fe.Partition, "attempt", n,
		"executor", a.executor, "reason", reason)
	if n >= s.opts.MaxFailures {
		return s.abortLocked(ts, fe), false
	}
	ts.retry = append(ts.retry, a.index)
	return nil, true
}

// ExecutorLost resubmits the tasks that were running on a lost executor. They
// count as failed only when the application caused the loss.
func (s *Scheduler) ExecutorLost(executor executorid.ID, reason LossReason) {
	revive := false
	var kills []killOrder
	s.mu.Lock()
	tids := s.byExecutor[executor]
	delete(s.byExecutor, executor)
	for tid := range tids {
		a := s.forgetLocked(tid)
		if a == nil {
			continue
		}
		s.taskEnded(tid, a, &Status{State: Failed, Err: "executor lost: " + reason.String()})
		if a.set.finished {
			continue
		}
		if reason.CausedByApp {
			k, r := s.taskFailedLocked(a.set, a, "executor lost: "+reason.String(), "")
			kills = append(kills, k...)
			revive = revive || r
			continue
		}
		a.set.retry = append(a.set.retry, a.index)
		revive = true
	}
	s.unlock()
	if len(tids) > 0 {
		s.log.Info("executor lost", "executor", executor, "reason", reason.String(),
			"resubmitted", len(tids), "counted_as_failure", reason.CausedByApp)
	}
	if s.opts.ExecutorLost != nil {
		s.opts.ExecutorLost(executor)
	}
	s.lostMu.Lock()
	listeners := s.lostListeners
	s.lostMu.Unlock()
	for _, f := range listeners {
		f(executor)
	}
	s.kill(kills, "task set aborted")
	if revive {
		s.backend.ReviveOffers()
	}
}

type killOrder struct {
	taskID   int64
	executor executorid.ID
}

// abortLocked finishes ts with err and returns the attempts to kill.
func (s *Scheduler) abortLocked(ts *TaskSet, err error) []killOrder {
	if ts.finished {
		return nil
	}
	var kills []killOrder
	for tid, a := range s.running {
		if a.set == ts {
			kills = append(kills, killOrder{tid, a.executor})
			s.forgetLocked(tid)
			s.taskEnded(tid, a, &Status{State: Killed, Err: "task set aborted"})
		}
	}
	s.finishLocked(ts, err)
	return kills
}

func (s *Scheduler) finishLocked(ts *TaskSet, err error) {
	ts.finished = true
	ts.err = err
	if s.plans != nil {
		s.plans.TaskSetEnded(ts.id)
	}
	end := &events.StageCompleted{StageID: ts.spec.StageID, Attempt: ts.spec.StageAttempt}
	if err != nil {
		end.Err = err.Error()
	}
	s.emitLocked(end)
	for i, a := range s.active {
		if a == ts {
			s.active = append(s.active[:i], s.active[i+1:]...)
			break
		}
	}
	// Whoever waits for the task set hears of its end after its events.
	s.publishLocked()
	close(ts.done)
}

func (s *Scheduler) kill(kills []killOrder, reason string) {
	for _, k := range kills {
		s.backend.KillTask(k.taskID, k.executor, reason)
	}
}

// taskEnded publishes the end of a forgotten attempt. Its duration is in
// microseconds, as the bus stamps times: finer is noise, and the event log
// compresses the digits dropped worst.
func (s *Scheduler) taskEnded(tid int64, a *attempt, st *Status) {
	if !s.opts.Events.Enabled() {
		return
	}
	e := s.ends.next()
	*e = events.TaskEnd{TaskID: tid, StageID: a.set.spec.StageID, StageAttempt: a.set.spec.StageAttempt,
		Partition: a.set.spec.Tasks[a.index].Partition, Attempt: a.number, Executor: a.executor,
		Duration: st.Duration.Truncate(time.Microsecond), Metrics: st.Metrics, FetchFailed: st.FetchFailed != nil,
		Launch: a.launched} // its start, if still held, goes with it
	a.launched = time.Time{}
	e.Metrics.ResultBytes = int64(len(st.Result))
	switch st.State {
	case Finished:
		e.State = events.TaskSuccess
	case Killed:
		e.State, e.Reason = events.TaskKilled, st.Err
	default:
		e.State, e.Reason = events.TaskFailed, st.Err
		if st.FetchFailed != nil {
			e.Reason = st.FetchFailed.Error()
		}
	}
	s.emitLocked(e)
}
