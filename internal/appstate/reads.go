package appstate

import (
	"cmp"
	"maps"
	"slices"
	"sort"
)

// Reads: each returns a copy taken under the lock.

// App is the application.
func (s *Store) App() App {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.app
}

// Conf is the application's redacted configuration, sorted by key.
func (s *Store) Conf() []Property {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Property, 0, len(s.conf))
	for k, v := range s.conf {
		out = append(out, Property{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// ConfValue is one setting of the redacted configuration.
func (s *Store) ConfValue(key string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.conf[key]
	return v, ok
}

// Jobs are the remembered jobs, newest first.
func (s *Store) Jobs() []Job {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Job, 0, len(s.jobOrder))
	for _, id := range slices.Backward(s.jobOrder) {
		out = append(out, copyJob(s.jobs[id]))
	}
	return out
}

// Job is one remembered job.
func (s *Store) Job(id int64) (Job, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	j := s.jobs[id]
	if j == nil {
		return Job{}, false
	}
	return copyJob(j), true
}

func copyJob(j *Job) Job {
	c := *j
	c.StageIDs = slices.Clone(j.StageIDs)
	c.KilledTasksSummary = maps.Clone(j.KilledTasksSummary)
	return c
}

// Stages are the remembered stage attempts, newest first (by stage id,
// then attempt).
func (s *Store) Stages() []Stage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Stage, 0, len(s.stages))
	for _, st := range s.stages {
		out = append(out, copyStage(st))
	}
	slices.SortFunc(out, func(a, b Stage) int {
		return cmp.Or(cmp.Compare(b.ID, a.ID), cmp.Compare(b.Attempt, a.Attempt))
	})
	return out
}

// StageAttempts are the remembered attempts of one stage, oldest first.
func (s *Store) StageAttempts(id int) []Stage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Stage
	for _, k := range s.stageOrder {
		if k.ID == id {
			out = append(out, copyStage(s.stages[k]))
		}
	}
	slices.SortFunc(out, func(a, b Stage) int { return cmp.Compare(a.Attempt, b.Attempt) })
	return out
}

// Stage is one stage attempt with its remembered tasks.
func (s *Store) Stage(id, attempt int) (StageDetail, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.stages[StageKey{id, attempt}]
	if st == nil {
		return StageDetail{}, false
	}
	d := s.stageHead(st)
	d.Tasks = make([]Task, 0, st.remembered())
	st.each(true, func(r *taskRec) bool {
		d.Tasks = append(d.Tasks, s.task(st, r))
		return true
	})
	slices.SortFunc(d.Tasks, func(a, b Task) int { return cmp.Compare(a.ID, b.ID) })
	d.Matched = len(d.Tasks)
	return d, true
}

// stageHead is st without its tasks.
func (s *Store) stageHead(st *stage) StageDetail {
	return StageDetail{Stage: copyStage(st), Failures: slices.Clone(st.failures), ForgottenTasks: st.forgotten,
		Remembered: st.remembered()}
}

func copyStage(st *stage) Stage {
	c := st.Stage
	c.ParentShuffles = slices.Clone(st.ParentShuffles)
	c.KilledTasksSummary = maps.Clone(st.KilledTasksSummary)
	return c
}

// Executors are the remembered executors, the driver first, then by id.
func (s *Store) Executors() []Executor {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Executor, 0, len(s.executors))
	for _, x := range s.executors {
		out = append(out, *x)
	}
	slices.SortFunc(out, func(a, b Executor) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Allocation is what the allocator and dynamic allocation did.
func (s *Store) Allocation() Allocation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a := s.alloc
	a.RecentRounds = s.rounds.newestFirst()
	a.TargetChanges = s.targets.newestFirst()
	return a
}
