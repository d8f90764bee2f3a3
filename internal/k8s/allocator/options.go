package allocator

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/internal/executorid"
)

// Policy names an allocation policy (drover.kubernetes.allocation.policy).
type Policy string

const (
	// PolicyAdaptive reaches the target as fast as the cluster admits pods.
	PolicyAdaptive Policy = "adaptive"
	// PolicySpark reproduces Spark's direct ExecutorPodsAllocator.
	PolicySpark Policy = "spark"
)

// Defaults for the options that have no Spark configuration key.
const (
	DefaultCreateConcurrency = 16
	DefaultMinBackoff        = time.Second
	DefaultMaxBackoff        = 30 * time.Second
	// DefaultPodCreationTimeout is Spark's allocation.executor.timeout.
	DefaultPodCreationTimeout = 600 * time.Second
	// DefaultExecutorIdleTimeout is Spark's dynamicAllocation.executorIdleTimeout.
	DefaultExecutorIdleTimeout = 60 * time.Second
)

// Options configures both Decide and the Allocator loop. Zero values of the
// optional fields take the defaults above.
type Options struct {
	// Policy is spark or adaptive (the default when empty).
	Policy Policy
	// BatchSize is spark.kubernetes.allocation.batch.size: the pods a spark
	// round creates, and adaptive's first round and pending floor once the
	// cluster has pushed back.
	BatchSize int
	// FirstRound is the most pods adaptive's first round creates, and its
	// pending floor, until the cluster first pushes back (an Unschedulable
	// or queue-held pod, a failed create, a quota). The Kubernetes backend
	// sets it to the client's burst, which sends that many creates at once
	// anyway. Values below BatchSize (0: unset) mean BatchSize.
	FirstRound int
	// BatchDelay is spark.kubernetes.allocation.batch.delay: the least time
	// between two rounds.
	BatchDelay time.Duration
	// MaxPendingPods is spark.kubernetes.allocation.maxPendingPods; 0 means
	// unset: unlimited for spark, max(BatchSize, running) for adaptive.
	MaxPendingPods int
	// PodCreationTimeout is how long a created pod may stay unseen before it
	// is forgotten and deleted; Spark's max(batch.delay*5,
	// allocation.executor.timeout).
	PodCreationTimeout time.Duration
	// ExecutorIdleTimeout is spark.dynamicAllocation.executorIdleTimeout:
	// excess pending pods younger than this are kept on downscale.
	ExecutorIdleTimeout time.Duration
	// AllocationMaximum is spark.kubernetes.allocation.maximum: executor ids
	// must stay below it over the application's life (Spark refuses an id
	// >= maximum). 0 means unlimited.
	AllocationMaximum executorid.ID
	// CreateConcurrency bounds the concurrent creates of adaptive; spark
	// creates one pod at a time.
	CreateConcurrency int
	// MinBackoff and MaxBackoff bound adaptive's wait after rounds whose
	// creates all failed: MinBackoff, doubling up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Gang is the size of the executors' gang, which a queue admits only
	// once all its pods exist (0: none). The pending cap is at least Gang,
	// and adaptive rounds grow when the queue holds the last one's pods
	// instead of waiting for them to be scheduled.
	Gang int
}

func (o Options) withDefaults() Options {
	if o.Policy == "" {
		o.Policy = PolicyAdaptive
	}
	if o.PodCreationTimeout <= 0 {
		o.PodCreationTimeout = max(5*o.BatchDelay, DefaultPodCreationTimeout)
	}
	if o.ExecutorIdleTimeout <= 0 {
		o.ExecutorIdleTimeout = DefaultExecutorIdleTimeout
	}
	if o.CreateConcurrency <= 0 {
		o.CreateConcurrency = DefaultCreateConcurrency
	}
	if o.Policy == PolicySpark {
		// Spark POSTs pods synchronously, one after the other.
		o.CreateConcurrency = 1
	}
	o.FirstRound = max(o.FirstRound, o.BatchSize)
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	return o
}

// Validate reports options that no default can repair.
func (o Options) Validate() error {
	switch o.Policy {
	case "", PolicyAdaptive, PolicySpark:
	default:
		return fmt.Errorf("invalid allocation policy %q: expected %s or %s", o.Policy, PolicyAdaptive, PolicySpark)
	}
	if o.BatchSize < 1 {
		return fmt.Errorf("invalid allocation batch size %d: expected an integer ≥ 1", o.BatchSize)
	}
	if o.BatchDelay <= 0 {
		return fmt.Errorf("invalid allocation batch delay %s: expected a duration > 0", o.BatchDelay)
	}
	if o.FirstRound < 0 {
		return fmt.Errorf("invalid first allocation round %d: expected an integer ≥ 0", o.FirstRound)
	}
	if o.MaxPendingPods < 0 {
		return fmt.Errorf("invalid maximum of pending pods %d: expected an integer ≥ 1, or 0 for unset", o.MaxPendingPods)
	}
	if o.Gang > 0 && o.MaxPendingPods > 0 && o.MaxPendingPods < o.Gang {
		return fmt.Errorf("at most %d pending executor pods (spark.kubernetes.allocation.maxPendingPods) is fewer than the gang of %d "+
			"(spark.executor.instances with drover.kubernetes.queue.gang): the queue admits the gang only once all its pods exist", o.MaxPendingPods, o.Gang)
	}
	if o.AllocationMaximum < 0 {
		return fmt.Errorf("invalid allocation maximum %d: expected an integer ≥ 1, or 0 for unlimited", o.AllocationMaximum)
	}
	return nil
}

// backoff is the wait after the streak-th consecutive round whose creates
// all failed: MinBackoff, doubling, at most MaxBackoff.
func backoff(streak int, o Options) time.Duration {
	d := o.MinBackoff
	for i := 1; i < streak && d < o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.MaxBackoff)
}
