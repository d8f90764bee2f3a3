package local

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/shuffle"
)

// Backend runs tasks as goroutines of the driver process, on a fixed number
// of cores.
type Backend struct {
	// LocalDir is where shuffle files go; set before Start.
	LocalDir string
	// Store is the tasks' object-store client: the driver's own, since
	// tasks run in the driver's process.
	Store  *objstore.Store
	Logger *slog.Logger

	sched       *scheduler.Scheduler
	shuffles    *shuffle.Manager
	cores       int
	parallelism int

	mu      sync.Mutex
	free    int
	stopped bool
	running map[int64]context.CancelFunc
	revive  chan struct{}
	stopCh  chan struct{}
	wg      sync.WaitGroup
}

var _ backend.SchedulerBackend = (*Backend)(nil)

// NewBackend returns a local backend with cores task slots; parallelism > 0
// overrides the default parallelism (spark.default.parallelism).
func NewBackend(sched *scheduler.Scheduler, cores, parallelism int) *Backend {
	return &Backend{
		sched:       sched,
		cores:       cores,
		parallelism: parallelism,
		free:        cores,
		running:     map[int64]context.CancelFunc{},
		revive:      make(chan struct{}, 1),
		stopCh:      make(chan struct{}),
	}
}

// Start starts the offer loop.
func (b *Backend) Start(context.Context) error {
	log := b.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := shuffle.NewManager(shuffle.ManagerOptions{Dir: b.LocalDir, ExecutorID: executorid.Driver, Logger: log})
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.shuffles = m
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.stopCh:
				return
			case <-b.revive:
				b.offer()
			}
		}
	}()
	return nil
}

// WaitReady returns at once: the driver is its own executor.
func (b *Backend) WaitReady(context.Context) error { return nil }

// DefaultParallelism is spark.default.parallelism or the number of cores.
func (b *Backend) DefaultParallelism() int {
	if b.parallelism > 0 {
		return b.parallelism
	}
	return b.cores
}

// ReviveOffers offers the free cores soon.
func (b *Backend) ReviveOffers() {
	select {
	case b.revive <- struct{}{}:
	default:
	}
}

func (b *Backend) offer() {
	b.mu.Lock()
	if b.stopped || b.free < b.sched.CPUsPerTask() {
		b.mu.Unlock()
		return
	}
	tasks := b.sched.ResourceOffers([]scheduler.Offer{{ExecutorID: executorid.Driver, Cores: b.free}})
	for i := range tasks {
		t := tasks[i]
		b.free -= t.CPUs
		ctx, cancel := context.WithCancel(context.Background())
		b.running[t.TaskID] = cancel
		b.wg.Add(1)
		go b.run(ctx, t)
	}
	b.mu.Unlock()
}

func (b *Backend) run(ctx context.Context, t scheduler.TaskDescription) {
	defer b.wg.Done()
	start := time.Now()
	var m funcs.Metrics
	o := executor.RunTask(ctx, funcs.Task{
		TaskID: t.TaskID, JobID: t.JobID, StageID: t.StageID, Partition: t.Partition, Attempt: t.Attempt,
		Shuffle: b.shuffles, Store: b.Store, Metrics: &m, Plan: t.Plan,
	}, t.Func, t.Payload)
	st := scheduler.Status{TaskID: t.TaskID, ExecutorID: executorid.Driver, Duration: time.Since(start),
		Metrics: events.TaskMetrics{InputBytes: m.InputBytes, InputRecords: m.InputRecords,
			OutputBytes: m.OutputBytes, OutputRecords: m.OutputRecords,
			ShuffleReadBytes: m.ShuffleReadBytes, ShuffleReadRecords: m.ShuffleReadRecords,
			ShuffleWriteBytes: m.ShuffleWriteBytes, ShuffleWriteRecords: m.ShuffleWriteRecords,
			SpillBytes: m.SpillBytes}}
	switch {
	case ctx.Err() != nil:
		st.State, st.Err = scheduler.Killed, "task killed"
	case o.Err != nil:
		st.State, st.Err, st.Stack, st.Panicked = scheduler.Failed, o.Err.Error(), o.Stack, o.Panicked
		if ff := o.FetchFailed; ff != nil {
			st.FetchFailed = &scheduler.FetchFailedError{ShuffleID: ff.ShuffleID, MapID: ff.MapID,
				ExecutorID: ff.ExecutorID, Address: ff.Address, Message: ff.Error()}
		}
	default:
		st.State, st.Result = scheduler.Finished, o.Result
	}
	b.mu.Lock()
	if cancel := b.running[t.TaskID]; cancel != nil {
		cancel()
		delete(b.running, t.TaskID)
	}
	b.free += t.CPUs
	b.mu.Unlock()
	b.sched.StatusUpdates([]scheduler.Status{st})
	b.offer()
}

// RemoveShuffles deletes the map outputs of the given shuffles.
func (b *Backend) RemoveShuffles(ids []int) {
	b.mu.Lock()
	m, stopped := b.shuffles, b.stopped
	b.mu.Unlock()
	if m == nil || stopped {
		return
	}
	if _, err := m.RemoveShuffles(ids...); err != nil && b.Logger != nil {
		b.Logger.Warn("removing shuffle files", "shuffles", ids, "err", err)
	}
}

// KillTask cancels a running task's context.
func (b *Backend) KillTask(taskID int64, _ executorid.ID, _ string) {
	b.mu.Lock()
	cancel := b.running[taskID]
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Stop cancels running tasks and waits for them.
func (b *Backend) Stop(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	for _, cancel := range b.running {
		cancel()
	}
	b.mu.Unlock()
	close(b.stopCh)
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	if b.shuffles != nil {
		return b.shuffles.Close()
	}
	return nil
}
