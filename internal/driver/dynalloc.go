package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dag"
	"github.com/drover-project/drover/internal/dynalloc"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/settings"
)

// dynamicAllocation is dynamic allocation's settings, checked before
// anything starts; nil when it is off or has no effect (local mode, whose
// task slots are fixed). local-cluster[N,…]'s N caps the executors.
func dynamicAllocation(conf *config.Conf, m master.URL, log *slog.Logger) (*dynalloc.Config, error) {
	if !config.DynamicAllocationEnabled.Get(conf) {
		return nil, nil
	}
	if m.Kind == master.Local {
		log.Warn("spark.dynamicAllocation.enabled has no effect in local mode: its task slots are fixed")
		return nil, nil
	}
	limit := 0
	if m.Kind == master.LocalCluster {
		limit = m.Executors
	}
	cfg, err := settings.DynamicAllocation(conf, limit)
	if err != nil {
		return nil, config.Invalid(fmt.Errorf("dynamic allocation: %w", err))
	}
	return &cfg, nil
}

// startDynamicAllocation runs the allocation policy until the returned
// function is called.
func startDynamicAllocation(ctx context.Context, cfg dynalloc.Config, conf *config.Conf, sched *scheduler.Scheduler,
	graph *dag.Graph, cluster master.Cluster, metrics *dynalloc.Metrics, events *events.Bus, log *slog.Logger) (func(), error) {
	client := cluster.Allocation()
	if client == nil {
		return nil, errors.New("dynamic allocation: this cluster manager cannot add or remove executors")
	}
	m := &dynalloc.Manager{
		Config:       cfg,
		Tasks:        sched,
		Client:       client,
		Executors:    client.ExecutorIDs,
		Exclude:      client.ExcludeExecutor,
		Shuffles:     graph.ShuffleHolders,
		Decommission: config.DecommissionEnabled.Get(conf),
		Logger:       log,
		Metrics:      metrics,
		Events:       events,
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { m.Run(runCtx); close(done) }()
	log.Info("dynamic allocation started", "min", cfg.Min, "max", cfg.Max, "initial", cfg.Initial,
		"idleTimeout", cfg.IdleTimeout)
	return func() { cancel(); <-done }, nil
}
