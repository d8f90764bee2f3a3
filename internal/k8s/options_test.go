package k8s

import (
	"os"
	"testing"

	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/scheduler"
)

// loadOptions is what the registry's factory does before New: the
// options of application appID read from conf and checked, with getenv
// (nil for os.Getenv) as the driver's environment.
func loadOptions(tb testing.TB, appID string, conf *config.Conf, getenv func(string) string) k8sconf.Options {
	tb.Helper()
	if getenv == nil {
		getenv = os.Getenv
	}
	opts, err := k8sconf.Load(conf, appID, getenv)
	if err != nil {
		tb.Fatal(err)
	}
	return opts
}

// newCluster builds a scheduler with so and app's Kubernetes cluster
// manager with opts as the driver does: the scheduler launches on the
// cluster manager's backend, whose options are read from conf as the
// driver reads them (backendOptions).
func newCluster(so scheduler.Options, app master.App, conf *config.Conf, opts k8sconf.Options, deps Deps) (*scheduler.Scheduler, *Cluster, error) {
	app.Coarse = backendOptions(app, conf)
	var c *Cluster
	s, err := scheduler.New(so, func(s *scheduler.Scheduler) (scheduler.Backend, error) {
		app.Scheduler = s
		var err error
		if c, err = New(app, opts, deps); err != nil {
			return nil, err
		}
		return c.Backend(), nil
	})
	return s, c, err
}

// backendOptions are the coarse backend's options read from conf as the
// driver reads them (internal/driver, which links this package).
func backendOptions(app master.App, conf *config.Conf) coarse.Options {
	sent := map[string]string{}
	for _, k := range executor.ConfKeys {
		if v, ok := conf.Lookup(k); ok {
			sent[k] = v
		}
	}
	return coarse.Options{
		AppID:              app.ID,
		Conf:               sent,
		Auth:               app.Security.Driver,
		MaxRegisteredWait:  config.MaxRegisteredResourcesWaitingTime.Get(conf),
		DefaultParallelism: config.DefaultParallelism.Get(conf),
		Prefetch:           config.SchedulerPrefetch.Get(conf),
		MaxPrefetch:        config.SchedulerMaxPrefetch.Get(conf),
		NetworkTimeout:     config.NetworkTimeout.Get(conf),
		TimeoutInterval:    config.NetworkTimeoutInterval.Get(conf),
		MaxLaunchBytes:     config.RPCMessageMaxSize.Get(conf),
	}
}
