package driver

import (
	"log/slog"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dag"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/metrics"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/scheduler"
)

// schedulerOptions are the task scheduler's options from the
// configuration; local[N,F] sets the task failures itself.
func schedulerOptions(conf *config.Conf, m master.URL, bus *events.Bus, log *slog.Logger) scheduler.Options {
	maxFailures := config.TaskMaxFailures.Get(conf)
	if m.Kind == master.Local {
		maxFailures = m.MaxFailures
	}
	return scheduler.Options{
		MaxFailures:   maxFailures,
		CPUsPerTask:   config.TaskCPUs.Get(conf),
		MaxResultSize: config.DriverMaxResultSize.Get(conf),
		MaxTaskSize:   config.RPCMessageMaxSize.Get(conf),
		Events:        bus,
		Logger:        log,
	}
}

// backendOptions are the coarse-grained backend's options from the
// configuration (master.App.Coarse), read once for whichever cluster
// manager runs one; it adds its addresses, executor counts and hooks.
func backendOptions(appID string, conf *config.Conf, auth rpc.Auth) coarse.Options {
	return coarse.Options{
		AppID:              appID,
		Conf:               executorConf(conf),
		Auth:               auth,
		MaxRegisteredWait:  config.MaxRegisteredResourcesWaitingTime.Get(conf),
		DefaultParallelism: config.DefaultParallelism.Get(conf),
		Prefetch:           config.SchedulerPrefetch.Get(conf),
		MaxPrefetch:        config.SchedulerMaxPrefetch.Get(conf),
		NetworkTimeout:     config.NetworkTimeout.Get(conf),
		TimeoutInterval:    config.NetworkTimeoutInterval.Get(conf),
		MaxLaunchBytes:     config.RPCMessageMaxSize.Get(conf),
	}
}

// executorConf is what executors are sent when they register: the keys
// they read (executor.ConfKeys) that are set, never anything else.
func executorConf(conf *config.Conf) map[string]string {
	out := map[string]string{}
	for _, k := range executor.ConfKeys {
		if v, ok := conf.Lookup(k); ok {
			out[k] = v
		}
	}
	return out
}

// metricsOptions are the driver's metrics' options.
func metricsOptions(conf *config.Conf, m master.URL, appID string, sched *scheduler.Scheduler, bus *events.Bus) metrics.Options {
	mo := metrics.Options{AppID: appID, AppName: config.AppName.Get(conf), TaskCPUs: config.TaskCPUs.Get(conf),
		Backlog: sched, Bus: bus}
	if m.Kind == master.Local {
		mo.LocalCores = m.Threads
	}
	return mo
}

// graphOptions are the DAG's options; shuffles no dataset reads any more
// are deleted through cleaner.
func graphOptions(conf *config.Conf, m master.URL, cleaner backend.ShuffleCleaner, log *slog.Logger) dag.Options {
	return dag.Options{
		MaxStageAttempts: config.StageMaxConsecutiveAttempts.Get(conf),
		MemoryBytes:      taskMemory(conf, m),
		MaxInFlight:      config.ReducerMaxSizeInFlight.Get(conf),
		RemoveShuffles:   cleaner.RemoveShuffles,
		Logger:           log,
	}
}

// taskMemory is each task's share of its executor's memory for shuffle
// buffers, aggregation and sorting before they spill to disk:
// spark.memory.fraction of the executor's memory divided among its cores.
func taskMemory(conf *config.Conf, m master.URL) int64 {
	mem, cores := config.ExecutorMemory.Get(conf), int64(config.ExecutorCores.Get(conf))
	switch m.Kind {
	case master.Local:
		mem, cores = config.DriverMemory.Get(conf), int64(m.Threads)
	case master.LocalCluster:
		mem, cores = int64(m.MemoryMiB)<<20, int64(m.CoresPerExecutor)
	}
	return int64(float64(mem)*config.MemoryFraction.Get(conf)) / max(1, cores)
}
