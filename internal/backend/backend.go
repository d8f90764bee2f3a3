package backend

import (
	"context"

	"github.com/drover-project/drover/internal/scheduler"
)

// SchedulerBackend runs the task scheduler's launches and kills on some set
// of executors.
type SchedulerBackend interface {
	scheduler.Backend
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

// ExecutorAllocationClient changes the number of executors: dynamic
// allocation and users call it; cluster managers implement it.
type ExecutorAllocationClient interface {
	// RequestTotalExecutors sets how many executors the application wants.
	RequestTotalExecutors(total int) error
	// KillExecutors removes the given executors; they may not register
	// again.
	KillExecutors(ids []string) error
}
