package appstate

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/seqmap"
)

// Store is the application's state, folded from its events.
type Store struct {
	mu   sync.RWMutex
	opts Options

	app  App
	conf map[string]string

	jobs     map[int64]*Job
	jobOrder []int64 // submission order

	stages     map[StageKey]*stage
	stageOrder []StageKey
	// lastStage is the stage taskStage found last, nil when none is kept.
	lastStage    *stage
	lastStageKey StageKey
	// lastJob is the job taskJob found last, nil when none is kept;
	// lastExecutor the executor executor found last.
	lastJob      *Job
	lastExecutor *Executor

	executors map[executorid.ID]*Executor
	dead      []executorid.ID // in order of death

	// hostOf is each executor's host, an index into hosts; it outlives
	// forgotten executors, whose tasks may still be shown.
	hostOf  map[executorid.ID]int32
	hosts   []string
	hostIDs map[string]int32
	// statuses are the task statuses taskRec.status refers to.
	statuses []string

	alloc   Allocation
	rounds  ring[events.AllocationRound]
	targets ring[events.TargetChanged]
}

// stage is a stage attempt with its tasks (tasks.go).
type stage struct {
	Stage
	// running are the attempts not ended; ended the remembered others,
	// packed, and endedIDs every attempt that ended, remembered or not,
	// so that a second end of one is not counted again.
	running  seqmap.Map[runningTask]
	ended    taskLog
	endedIDs idSet
	// reasons are the remembered failed or killed attempts' reasons.
	reasons   map[int64]string
	done      []uint64 // bit set of the partitions with a successful attempt
	failures  []Task
	forgotten int
}

// New returns an empty store; zero fields of opts take Spark's defaults.
func New(opts Options) *Store {
	def := DefaultOptions()
	for _, f := range []struct{ v, d *int }{{&opts.RetainedJobs, &def.RetainedJobs}, {&opts.RetainedStages, &def.RetainedStages},
		{&opts.RetainedTasks, &def.RetainedTasks}, {&opts.RetainedRounds, &def.RetainedRounds}} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	switch {
	case opts.RetainedDeadExecutors == 0:
		opts.RetainedDeadExecutors = def.RetainedDeadExecutors
	case opts.RetainedDeadExecutors < 0:
		opts.RetainedDeadExecutors = 0
	}
	return &Store{
		opts:      opts,
		jobs:      map[int64]*Job{},
		stages:    map[StageKey]*stage{},
		executors: map[executorid.ID]*Executor{},
		hostOf:    map[executorid.ID]int32{},
		hosts:     []string{""},
		hostIDs:   map[string]int32{"": 0},
		statuses:  []string{TaskRunning, events.TaskSuccess, events.TaskFailed, events.TaskKilled},
		rounds:    ring[events.AllocationRound]{max: opts.RetainedRounds},
		targets:   ring[events.TargetChanged]{max: opts.RetainedRounds},
	}
}

// Handle folds one event in; it is what a history server calls for each
// event of a log.
func (s *Store) Handle(e events.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handleLocked(e)
}

// handleChunk is how many events HandleAll folds in under one hold of the
// store's lock: readers wait for no more than that.
const handleChunk = 256

// HandleAll folds events in, in order; it is a consumer for
// events.Bus.SubscribeBatches.
func (s *Store) HandleAll(evs []events.Event) {
	for len(evs) > 0 {
		n := min(len(evs), handleChunk)
		s.handleChunk(evs[:n])
		evs = evs[n:]
	}
}

func (s *Store) handleChunk(evs []events.Event) {
	s.mu.Lock()
	defer s.mu.Unlock() // a panic, which the UI's consumer recovers, must not leave the store locked
	for _, e := range evs {
		s.handleLocked(e)
	}
}

func (s *Store) handleLocked(e events.Event) {
	switch e := e.(type) {
	case *events.AppStart:
		s.app = App{ID: e.AppID, Name: e.Name, Master: e.Master, User: e.User, DeployMode: e.DeployMode,
			DriverHost: e.DriverHost, Start: e.Time}
		s.conf = maps.Clone(e.Conf)
		// The driver runs tasks itself in local mode; Spark lists it too.
		s.executors[executorid.Driver] = &Executor{ID: executorid.Driver, HostPort: e.DriverHost, State: ExecutorActive, Added: e.Time}
		s.setHost(executorid.Driver, e.DriverHost)
	case *events.AppEnd:
		s.app.Ended, s.app.End, s.app.Err = true, e.Time, e.Err
	case *events.JobStart:
		s.jobStart(e)
	case *events.JobEnd:
		if j := s.jobs[e.JobID]; j != nil {
			j.Completed, j.Err = e.Time, e.Err
			j.Status = JobSucceeded
			if e.Err != "" {
				j.Status = JobFailed
			}
			s.trimJobs()
		}
	case *events.StageSubmitted:
		s.stageSubmitted(e)
	case *events.StageCompleted:
		if st := s.stages[StageKey{e.StageID, e.Attempt}]; st != nil {
			st.Completed, st.FailureReason = e.Time, e.Err
			st.Status = StageComplete
			if e.Err != "" {
				st.Status = StageFailed
			}
			if j := s.jobs[st.JobID]; j != nil {
				j.ActiveStages--
				if e.Err == "" {
					j.CompletedStages++
				} else {
					j.FailedStages++
				}
			}
			s.trimStages()
		}
	case *events.TaskStart:
		s.taskStart(e)
		s.touched(e.Time) // the hot path: no call through the interface
		return
	case *events.TaskEnd:
		s.taskEnd(e)
		s.touched(e.Time)
		return
	case *events.ExecutorAdded:
		x := s.executor(e.Executor)
		x.HostPort, x.Cores, x.Added, x.State = e.Address, e.Cores, e.Time, ExecutorActive
		s.setHost(e.Executor, e.Address)
		if e.Pod != "" {
			x.Pod = e.Pod
		}
	case *events.ExecutorRemoved:
		x := s.executor(e.Executor)
		x.RemoveReason, x.ExitCode = e.Reason, e.ExitCode
		s.alloc.ExecutorsRemoved++
		s.markDead(x, e.Time)
	case *events.ExecutorPlaced:
		x := s.executor(e.Executor)
		x.Pod, x.Phase = e.Pod, e.Phase
		if e.Node != "" {
			x.Node = e.Node
		}
		switch {
		case x.State == "" && (e.Phase == "Succeeded" || e.Phase == "Failed"):
			// Its pod ended before it registered: it never will.
			s.markDead(x, e.Time)
		case x.State == "":
			x.State = ExecutorPending
		}
	case *events.AllocationRound:
		a := &s.alloc
		a.Rounds++
		a.Target, a.Running, a.Pending, a.Gated = e.Target, e.Running, e.Pending, e.Gated
		a.Resent += int64(e.Resent)
		a.DeletedExcess += int64(e.DeletedExcess)
		a.DeletedLost += int64(e.DeletedLost)
		a.Waiting, a.LastRound = e.Waiting, e.Time
		if e.Report != "" {
			a.Report, a.ReportTime = e.Report, e.Time
		}
		s.rounds.add(*e)
	case *events.PodCreated:
		if e.Err == "" {
			s.alloc.PodsCreated++
		} else {
			s.alloc.CreateErrors++
		}
	case *events.TargetChanged:
		s.alloc.DynamicTarget, s.alloc.Backlog = e.Target, e.Backlog
		s.targets.add(*e)
	}
	s.touched(events.TimeOf(e))
}

// touched records that the application changed at t.
func (s *Store) touched(t time.Time) {
	if t.After(s.app.LastUpdated) {
		s.app.LastUpdated = t
	}
}

func (s *Store) jobStart(e *events.JobStart) {
	if _, ok := s.jobs[e.JobID]; ok {
		return
	}
	s.jobs[e.JobID] = &Job{ID: e.JobID, Name: e.Name, Submitted: e.Time, Status: JobRunning, KilledTasksSummary: map[string]int{}}
	s.jobOrder = append(s.jobOrder, e.JobID)
}

func (s *Store) stageSubmitted(e *events.StageSubmitted) {
	k := StageKey{e.StageID, e.Attempt}
	if _, ok := s.stages[k]; ok {
		return
	}
	s.stages[k] = &stage{
		Stage: Stage{ID: e.StageID, Attempt: e.Attempt, JobID: e.JobID, Name: e.Name, Status: StageActive, NumTasks: e.NumTasks,
			ParentShuffles: slices.Clone(e.ParentShuffles), Submitted: e.Time, KilledTasksSummary: map[string]int{}},
		endedIDs: idSet{blocks: map[int64]*[64]uint64{}},
		reasons:  map[int64]string{},
		done:     make([]uint64, (max(e.NumTasks, 0)+63)/64),
	}
	s.stageOrder = append(s.stageOrder, k)
	if j := s.jobs[e.JobID]; j != nil {
		j.ActiveStages++
		if !slices.Contains(j.StageIDs, e.StageID) {
			j.StageIDs = append(j.StageIDs, e.StageID)
			j.NumTasks += e.NumTasks
		}
	}
	s.trimStages()
}

// taskStage is the stage of a task event, or nil. Task events come in runs
// of one stage: the last one found is kept, for a map lookup less per
// event.
func (s *Store) taskStage(id, attempt int) *stage {
	if k := (StageKey{id, attempt}); s.lastStage == nil || s.lastStageKey != k {
		s.lastStage, s.lastStageKey = s.stages[k], k
	}
	return s.lastStage
}

// taskJob is job id, or nil; as taskStage, it keeps the last one found.
func (s *Store) taskJob(id int64) *Job {
	if s.lastJob == nil || s.lastJob.ID != id {
		s.lastJob = s.jobs[id]
	}
	return s.lastJob
}

func (s *Store) taskStart(e *events.TaskStart) {
	x := s.executor(e.Executor)
	x.ActiveTasks++
	x.TotalTasks++
	st := s.taskStage(e.StageID, e.StageAttempt)
	if st == nil {
		return
	}
	st.ActiveTasks++
	st.launched(e.Time)
	if j := s.taskJob(st.JobID); j != nil {
		j.ActiveTasks++
	}
	if !st.known(e.TaskID) {
		st.running.Put(e.TaskID, runningTask{partition: int32(e.Partition), attempt: int32(e.Attempt), executor: e.Executor,
			launched: unixNano(e.Time)})
		s.trimTasks(st)
	}
}

func (s *Store) taskEnd(e *events.TaskEnd) {
	// With a Launch time, the attempt's start comes with its end: it was
	// never counted as running.
	combined := !e.Launch.IsZero()
	x := s.executor(e.Executor)
	if combined {
		x.TotalTasks++
	} else if x.ActiveTasks > 0 {
		x.ActiveTasks--
	}
	x.TaskTime += e.Duration
	x.InputBytes += e.Metrics.InputBytes
	x.ShuffleRead += e.Metrics.ShuffleReadBytes
	x.ShuffleWrite += e.Metrics.ShuffleWriteBytes
	x.SpillBytes += e.Metrics.SpillBytes
	switch e.State {
	case events.TaskSuccess:
		x.CompletedTasks++
	case events.TaskKilled:
		x.KilledTasks++
	default:
		x.FailedTasks++
	}
	st := s.taskStage(e.StageID, e.StageAttempt)
	if st == nil {
		return
	}
	j := s.taskJob(st.JobID)
	if j == nil {
		j = &Job{KilledTasksSummary: map[string]int{}} // counts go nowhere
	}
	var t taskRec
	var rt *runningTask
	ok := false
	if !combined {
		rt, ok = st.running.Take(e.TaskID)
	}
	switch {
	case ok:
		t = rt.rec(e.TaskID)
	case st.endedIDs.has(e.TaskID):
		return // a duplicate end
	case combined:
		st.launched(e.Launch)
		t = taskRec{id: e.TaskID, partition: int32(e.Partition), attempt: int32(e.Attempt), executor: e.Executor,
			launched: unixNano(e.Launch)}
		st.ActiveTasks++ // as its start would have
		j.ActiveTasks++
	default:
		// Its start was dropped or forgotten: remember its end anyway.
		t = taskRec{id: e.TaskID, partition: int32(e.Partition), attempt: int32(e.Attempt), executor: e.Executor,
			launched: unixNano(e.Time.Add(-e.Duration))}
		st.ActiveTasks++
		j.ActiveTasks++
	}
	t.ended, t.duration, t.status, t.fetchFailed, t.metrics = unixNano(e.Time), e.Duration, s.statusIndex(e.State), e.FetchFailed, e.Metrics
	st.ended.add(&t)
	st.endedIDs.add(e.TaskID)
	if e.Reason != "" && t.status != statusSuccess {
		st.reasons[e.TaskID] = e.Reason
	}
	st.ActiveTasks--
	j.ActiveTasks--
	st.RunTime += e.Duration
	st.Metrics.Add(e.Metrics)
	switch e.State {
	case events.TaskSuccess:
		st.CompleteTasks++
		j.CompletedTasks++
		if p := e.Partition; p >= 0 && p < st.NumTasks && st.done[p/64]&(1<<(p%64)) == 0 {
			st.done[p/64] |= 1 << (p % 64)
			st.CompletedIndices++
			j.CompletedIndices++
		}
	case events.TaskKilled:
		st.KilledTasks++
		j.KilledTasks++
		st.KilledTasksSummary[e.Reason]++
		j.KilledTasksSummary[e.Reason]++
	default:
		st.FailedTasks++
		j.FailedTasks++
	}
	if e.State != events.TaskSuccess {
		ft := s.task(st, &t)
		ft.Reason = e.Reason
		st.failures = append(st.failures, ft)
		if len(st.failures) > maxFailures {
			st.failures = slices.Delete(st.failures, 0, len(st.failures)-maxFailures)
		}
	}
	s.trimTasks(st)
}

// launched notes a task attempt's launch at t: the scheduler may publish
// the start of a long task after the ends, with their starts, of tasks
// launched later.
func (st *stage) launched(t time.Time) {
	if st.FirstTaskLaunched.IsZero() || t.Before(st.FirstTaskLaunched) {
		st.FirstTaskLaunched = t
	}
}

// executor returns id's record, created when new.
func (s *Store) executor(id executorid.ID) *Executor {
	if x := s.lastExecutor; x != nil && x.ID == id {
		return x // launches come in runs on one executor
	}
	x := s.executors[id]
	if x == nil {
		x = &Executor{ID: id}
		s.executors[id] = x
	}
	s.lastExecutor = x
	return x
}

func (s *Store) markDead(x *Executor, at time.Time) {
	if x.State == ExecutorDead {
		return
	}
	x.State, x.Removed = ExecutorDead, at
	s.dead = append(s.dead, x.ID)
	if n := len(s.dead) - s.opts.RetainedDeadExecutors; n > 0 {
		for _, id := range s.dead[:n] {
			delete(s.executors, id)
			s.lastExecutor = nil
		}
		s.dead = slices.Delete(s.dead, 0, n)
	}
}
