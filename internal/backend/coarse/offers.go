package coarse

import (
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/scheduler"
)

// Offers: the scheduler's task launches onto the executors' free cores.

// ReviveOffers makes offers for every executor's free cores soon.
func (b *Backend) ReviveOffers() {
	select {
	case b.revive <- struct{}{}:
	default:
	}
}

func (b *Backend) reviveLoop() {
	for {
		select {
		case <-b.stopCh:
			return
		case <-b.revive:
			b.makeOffers(everyExecutor)
		}
	}
}

// everyExecutor asks makeOffers for the offers of all executors.
const everyExecutor executorid.ID = -1

// makeOffers offers the free cores of one executor, or of every executor,
// and sends the resulting launches.
func (b *Backend) makeOffers(id executorid.ID) {
	cpus := b.sched.CPUsPerTask()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	b.forgetEndedLocked()
	extra := b.prefetchLocked()
	var offers []scheduler.Offer
	add := func(ex *executorData) {
		if n := ex.FreeCores + extra*ex.TotalCores; !ex.disabled && !ex.decommissioning && n >= cpus {
			offers = append(offers, scheduler.Offer{ExecutorID: ex.ID, Cores: n})
		}
	}
	if id != everyExecutor {
		if ex := b.executors[id]; ex != nil {
			add(ex)
		}
	} else {
		for _, ex := range b.executors {
			add(ex)
		}
	}
	if len(offers) == 0 {
		return
	}
	tasks := b.sched.ResourceOffers(offers)
	// Each executor's launches, in batches of at most MaxLaunchBytes of
	// plans and payloads (a task alone may reach it): one message each.
	// The plan of a task set goes with its first task on the executor.
	type batching struct {
		ex    *executorData
		all   []*pb.LaunchBatch
		bytes int64
	}
	var order []*batching
	var batches map[*executorData]*batching // when more than one executor was offered
	if len(offers) > 1 {
		batches = make(map[*executorData]*batching, len(offers))
	}
	for i := range tasks {
		t := &tasks[i]
		ex := b.executors[t.ExecutorID]
		ex.FreeCores -= t.CPUs
		if ex.running == nil {
			ex.running = map[int64]int{}
		}
		ex.running[t.TaskID] = t.CPUs
		var bt *batching
		if batches == nil {
			if len(order) == 0 {
				order = append(order, &batching{ex: ex})
			}
			bt = order[0]
		} else if bt = batches[ex]; bt == nil {
			bt = &batching{ex: ex}
			batches[ex] = bt
			order = append(order, bt)
		}
		size := int64(len(t.Payload))
		newPlan := !ex.plans[t.TaskSetID]
		if newPlan {
			size += int64(len(t.Plan))
		}
		if len(bt.all) == 0 || bt.bytes+size > b.opts.MaxLaunchBytes {
			bt.all = append(bt.all, &pb.LaunchBatch{})
			bt.bytes = 0
		}
		bt.bytes += size
		lb := bt.all[len(bt.all)-1]
		if newPlan {
			if ex.plans == nil {
				ex.plans = map[int64]bool{}
			}
			ex.plans[t.TaskSetID] = true
			lb.Plans = append(lb.Plans, &pb.StagePlan{
				TaskSet:      t.TaskSetID,
				JobId:        t.JobID,
				StageId:      int32(t.StageID),
				StageAttempt: int32(t.StageAttempt),
				Func:         t.Func,
				Cpus:         int32(t.CPUs),
				Plan:         t.Plan,
			})
		}
		lb.Tasks = append(lb.Tasks, &pb.TaskDescription{
			TaskId:    t.TaskID,
			TaskSet:   t.TaskSetID,
			Partition: int32(t.Partition),
			Attempt:   int32(t.Attempt),
			Payload:   t.Payload,
		})
	}
	// Queued under b.mu, so a ForgetPlans for a set never overtakes the
	// launch that carried its plan.
	for _, bt := range order {
		for _, lb := range bt.all {
			bt.ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_Launch{Launch: lb}})
		}
	}
}

// TaskSetEnded queues the set's plan to be forgotten by the executors that
// were sent it. It runs under the scheduler's lock, so the work is left to
// the next round of offers, which it asks for.
func (b *Backend) TaskSetEnded(id int64) {
	b.endedMu.Lock()
	b.ended = append(b.ended, id)
	b.endedMu.Unlock()
	b.ReviveOffers()
}

// forgetEndedLocked tells each executor to drop the plans of the task sets
// that ended, if it was sent them.
func (b *Backend) forgetEndedLocked() {
	b.endedMu.Lock()
	ended := b.ended
	b.ended = nil
	b.endedMu.Unlock()
	if len(ended) == 0 {
		return
	}
	for _, ex := range b.executors {
		var forget []int64
		for _, id := range ended {
			if ex.plans[id] {
				delete(ex.plans, id)
				forget = append(forget, id)
			}
		}
		if len(forget) > 0 {
			ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_ForgetPlans{ForgetPlans: &pb.ForgetPlans{TaskSets: forget}}})
		}
	}
}

// prefetchLocked is how many tasks per core to queue ahead of free cores:
// none while no more tasks wait than all executors have free cores (every
// executor will be busy anyway, so queueing cannot starve one, and a short
// job spreads over every executor); otherwise what the scheduler's measure
// of the next tasks asks for, from Options.Prefetch to Options.MaxPrefetch.
func (b *Backend) prefetchLocked() int {
	if b.opts.Prefetch <= 0 {
		return 0
	}
	// Without a backlog there is nothing to prefetch, and the count of
	// free cores stops once they cover it: every registration and status
	// update offers, and a full pass over thousands of executors each time
	// was most of a driver's CPU while they registered.
	pending := b.sched.PendingTasks()
	if pending == 0 {
		return 0
	}
	free := 0
	for _, ex := range b.executors {
		if !ex.disabled && !ex.decommissioning && ex.FreeCores > 0 {
			if free += ex.FreeCores; free >= pending {
				return 0
			}
		}
	}
	return b.sched.QueueAhead(b.opts.Prefetch, max(b.opts.Prefetch, b.opts.MaxPrefetch))
}

// KillTask asks an executor to stop a task.
func (b *Backend) KillTask(taskID int64, executorID executorid.ID, reason string) {
	b.mu.Lock()
	ex := b.executors[executorID]
	b.mu.Unlock()
	if ex != nil {
		ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_Kill{Kill: &pb.KillTask{TaskId: taskID, Reason: reason}}})
	}
}

// RemoveShuffles tells every executor to delete its map outputs of the
// given shuffles. Executors without any ignore it; it costs one small
// message each, as Spark's broadcast to every block manager does.
func (b *Backend) RemoveShuffles(ids []int) {
	msg := &pb.RemoveShuffles{ShuffleIds: make([]int64, len(ids))}
	for i, id := range ids {
		msg.ShuffleIds[i] = int64(id)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ex := range b.executors {
		ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_RemoveShuffles{RemoveShuffles: msg}})
	}
}
