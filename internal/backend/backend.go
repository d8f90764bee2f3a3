package backend

import (
	"context"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/scheduler"
)

// SchedulerBackend runs the task scheduler's launches and kills on some set
// of executors.
type SchedulerBackend interface {
	scheduler.Backend
	ShuffleCleaner
	// Start brings the backend up; executors may register from then on.
	Start(ctx context.Context) error
	// WaitReady blocks until enough executors have registered
	// (spark.scheduler.minRegisteredResourcesRatio) or
	// spark.scheduler.maxRegisteredResourcesWaitingTime has passed.
	WaitReady(ctx context.Context) error
	// Stop shuts the executors down and releases everything the backend
	// created.
	Stop(ctx context.Context) error
	// DefaultParallelism is spark.default.parallelism, or the total number
	// of executor cores (at least 2).
	DefaultParallelism() int
}

// ShuffleCleaner deletes shuffles' map outputs wherever the executors keep
// them, once no dataset reads them (the cleaner's target).
type ShuffleCleaner interface {
	RemoveShuffles(ids []int)
}

// ExecutorRegistry is the backend's view of its executors that dynamic
// allocation needs.
type ExecutorRegistry interface {
	// ExecutorIDs lists the registered executors.
	ExecutorIDs() []executorid.ID
	// ExcludeExecutor keeps new tasks off an executor about to be removed.
	ExcludeExecutor(id executorid.ID)
}

// Scalable is a cluster manager whose executors dynamic allocation can add
// and remove.
type Scalable interface {
	ExecutorAllocationClient
	ExecutorRegistry
}

// NewScalable joins a cluster manager's allocation client and its
// backend's registry.
func NewScalable(c ExecutorAllocationClient, r ExecutorRegistry) Scalable {
	return struct {
		ExecutorAllocationClient
		ExecutorRegistry
	}{c, r}
}

// ExecutorAllocationClient changes the number of executors: dynamic
// allocation and users call it; cluster managers implement it.
type ExecutorAllocationClient interface {
	// RequestTotalExecutors sets how many executors the application wants.
	RequestTotalExecutors(total int) error
	// KillExecutors removes the given executors; they may not register
	// again.
	KillExecutors(ids []executorid.ID) error
}
