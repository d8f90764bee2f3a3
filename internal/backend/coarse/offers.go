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
	if b.stopped {
		b.mu.Unlock()
		return
	}
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
		b.mu.Unlock()
		return
	}
	tasks := b.sched.ResourceOffers(offers)
	// Each executor's launches, in batches of at most MaxLaunchBytes of
	// payload (a task alone may reach it): one message each.
	type batching struct {
		ex    *executorData
		all   []*pb.LaunchBatch
		bytes int64
	}
	var order []*batching
	batches := map[*executorData]*batching{}
	for i := range tasks {
		t := &tasks[i]
		ex := b.executors[t.ExecutorID]
		ex.FreeCores -= t.CPUs
		bt := batches[ex]
		if bt == nil {
			bt = &batching{ex: ex}
			batches[ex] = bt
			order = append(order, bt)
		}
		size := int64(len(t.Payload))
		if len(bt.all) == 0 || bt.bytes+size > b.opts.MaxLaunchBytes {
			bt.all = append(bt.all, &pb.LaunchBatch{})
			bt.bytes = 0
		}
		bt.bytes += size
		lb := bt.all[len(bt.all)-1]
		lb.Tasks = append(lb.Tasks, &pb.TaskDescription{
			TaskId:       t.TaskID,
			JobId:        t.JobID,
			StageId:      int32(t.StageID),
			StageAttempt: int32(t.StageAttempt),
			Partition:    int32(t.Partition),
			Attempt:      int32(t.Attempt),
			Func:         t.Func,
			Payload:      t.Payload,
			Cpus:         int32(t.CPUs),
		})
	}
	b.mu.Unlock()
	for _, bt := range order {
		for _, lb := range bt.all {
			bt.ex.out.add(&pb.DriverMessage{Msg: &pb.DriverMessage_Launch{Launch: lb}})
		}
	}
}

// prefetchLocked is how many tasks per core to queue ahead of free cores:
// Options.Prefetch while more tasks wait than all executors have free cores
// (every executor will be busy anyway, so queueing cannot starve one), else
// none, so a short job spreads over every executor.
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
	return b.opts.Prefetch
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
