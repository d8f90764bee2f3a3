package settings

import (
	"fmt"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dynalloc"
)

// DynamicAllocation is the dynamic allocation policy's configuration from
// spark.dynamicAllocation.*, checked; maxExecutors caps Max (the N
// of local-cluster[N,C,M]; 0 for no cap).
func DynamicAllocation(c *config.Conf, maxExecutors int) (dynalloc.Config, error) {
	cfg := dynalloc.Config{
		Min:                     config.DynamicAllocationMinExecutors.Get(c),
		Max:                     config.DynamicAllocationMaxExecutors.Get(c),
		TasksPerExecutor:        max(1, config.ExecutorCores.Get(c)/max(1, config.TaskCPUs.Get(c))),
		Ratio:                   config.DynamicAllocationExecutorAllocationRatio.Get(c),
		BacklogTimeout:          config.DynamicAllocationSchedulerBacklogTimeout.Get(c),
		SustainedBacklogTimeout: config.DynamicAllocationSustainedSchedulerBacklogTimeout.Get(c),
		IdleTimeout:             config.DynamicAllocationExecutorIdleTimeout.Get(c),
		ShuffleTracking:         config.DynamicAllocationShuffleTrackingEnabled.Get(c),
		ShuffleTimeout:          config.DynamicAllocationShuffleTrackingTimeout.Get(c),
	}
	if maxExecutors > 0 {
		cfg.Max = min(cfg.Max, maxExecutors)
	}
	var err error
	cfg.Initial, err = InitialExecutors(c)
	if err != nil {
		return cfg, err
	}
	if !cfg.ShuffleTracking {
		// There is no external shuffle service: removing an executor loses
		// its map outputs, which running jobs would recompute in a loop.
		return cfg, fmt.Errorf("%s=false needs an external shuffle service, which drover does not have; leave it true",
			config.DynamicAllocationShuffleTrackingEnabled.Key())
	}
	if cfg.Min > cfg.Max {
		return cfg, fmt.Errorf("%s (%d) is larger than %s (%d)", config.DynamicAllocationMinExecutors.Key(), cfg.Min,
			config.DynamicAllocationMaxExecutors.Key(), cfg.Max)
	}
	if cfg.Initial > cfg.Max {
		return cfg, fmt.Errorf("the initial number of executors (%d: the largest of %s, %s and %s) is larger than %s (%d)",
			cfg.Initial, config.DynamicAllocationMinExecutors.Key(), config.DynamicAllocationInitialExecutors.Key(),
			config.ExecutorInstances.Key(), config.DynamicAllocationMaxExecutors.Key(), cfg.Max)
	}
	return cfg, nil
}

// InitialExecutors is the number of executors an application starts with:
// spark.executor.instances without dynamic allocation; with it, the largest
// of minExecutors, initialExecutors and spark.executor.instances when that
// is set explicitly.
func InitialExecutors(c *config.Conf) (int, error) {
	if !config.DynamicAllocationEnabled.Get(c) {
		return config.ExecutorInstances.Get(c), nil
	}
	n := max(config.DynamicAllocationMinExecutors.Get(c), config.DynamicAllocationInitialExecutors.Get(c))
	if v, ok := config.ExecutorInstances.Lookup(c); ok {
		n = max(n, v)
	}
	return n, nil
}
