package k8s

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/dynalloc"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/allocator"
	"github.com/drover-project/drover/internal/k8s/lifecycle"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

// CheckConf checks, without an API server, every setting the Kubernetes
// cluster manager reads: executor counts, allocation, and the executor pod
// (image, template, resources, labels, volumes, secrets), by building one
// with the functions the driver uses. drover submit calls it so a bad
// setting fails the submission before any object exists; New calls it so
// a client-mode driver fails before it creates anything. driverPod is the
// driver's pod as submitted, nil in client mode. The error joins every
// problem found, each naming its key.
func CheckConf(conf *config.Conf, appID string, driverPod *corev1.Pod) error {
	return config.Invalid(checkConf(conf, appID, driverPod))
}

func checkConf(conf *config.Conf, appID string, driverPod *corev1.Pod) error {
	var errs []error
	if _, err := dynalloc.InitialExecutors(conf); err != nil {
		errs = append(errs, err)
	}
	if err := allocatorOptions(conf).Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := executorBinary(conf); err != nil {
		errs = append(errs, err)
	}
	if driverPod != nil && driverPod.UID == "" {
		// Not created yet: any uid lets the owner reference be built.
		driverPod = driverPod.DeepCopy()
		driverPod.UID = "00000000-0000-0000-0000-000000000000"
	}
	// The executors' command and the driver's URL are only known inside
	// the driver; their values do not change what is checked.
	ec, err := podspec.NewExecutorConf(conf, appID, driverPod, "drover://driver:7078", []string{"/executor"})
	if err == nil {
		// The driver makes the credentials; their values change nothing
		// that is checked.
		ec.Credentials = podspec.Credentials{Secret: "checked", TLS: []byte("checked")}
		_, err = podspec.BuildExecutorPod(ec, 1)
	}
	if err != nil {
		errs = append(errs, err)
	}
	// The Volcano PodGroup is built where it is created: by drover submit
	// (a driver pod to come) or by a client-mode driver; a cluster-mode
	// driver finds it made.
	if driverPod != nil || config.DeployMode.Get(conf) != "cluster" {
		if _, err := podspec.VolcanoPodGroup(conf, appID, driverPod != nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// allocatorOptions are the allocator's settings from the configuration.
func allocatorOptions(conf *config.Conf) allocator.Options {
	o := allocator.Options{
		Policy:              allocator.Policy(config.KubernetesAllocationPolicy.Get(conf)),
		BatchSize:           config.KubernetesAllocationBatchSize.Get(conf),
		BatchDelay:          config.KubernetesAllocationBatchDelay.Get(conf),
		PodCreationTimeout:  max(5*config.KubernetesAllocationBatchDelay.Get(conf), config.KubernetesAllocationExecutorTimeout.Get(conf)),
		ExecutorIdleTimeout: config.DynamicAllocationExecutorIdleTimeout.Get(conf),
		AllocationMaximum:   executorid.ID(config.KubernetesAllocationMaximum.Get(conf)),
		CreateConcurrency:   config.KubernetesAllocationCreateConcurrency.Get(conf),
		// The client sends its burst of creates at once anyway: a first
		// round of that size costs the API server nothing more, and an
		// application of up to that many executors needs no ramp.
		FirstRound: config.KubernetesClientBurst.Get(conf),
	}
	// Only an explicit cap replaces the adaptive policy's running-based one.
	if config.KubernetesAllocationMaxPendingPods.IsSet(conf) {
		o.MaxPendingPods = config.KubernetesAllocationMaxPendingPods.Get(conf)
	}
	// A mistake in the queue's settings is NewExecutorConf's to report.
	q, _ := podspec.ResolveQueue(conf, "")
	o.Gang = q.Gang
	return o
}

// CheckUnused checks the spark.kubernetes.* and drover.kubernetes.* settings of an application
// whose master is not Kubernetes (local, local-cluster), where they have
// no effect: it returns the keys set, for a warning naming them, and
// CheckConf's error, so a mistake in them is reported, not silently
// carried to the day the application moves to a cluster.
func CheckUnused(conf *config.Conf, appID string) (set []string, err error) {
	for k := range conf.Explicit() {
		if strings.HasPrefix(k, "spark.kubernetes.") || strings.HasPrefix(k, "drover.kubernetes.") {
			set = append(set, k)
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	slices.Sort(set)
	if config.KubernetesExecutorContainerImage.Get(conf) == "" {
		// Required on Kubernetes only; its absence is no mistake here.
		conf = conf.Clone().Set(config.KubernetesContainerImage.Key(), "unused")
	}
	if err := checkConf(conf, appID, nil); err != nil {
		return set, config.Invalid(fmt.Errorf("the Kubernetes settings, which this master does not use, have mistakes: %w", err))
	}
	return set, nil
}

// lifecycleOptions are the lifecycle manager's options from the configuration.
func (c *Cluster) lifecycleOptions() lifecycle.Options {
	o := lifecycle.DefaultOptions()
	o.ContainerName = c.execConf.ContainerName
	o.DeleteOnTermination = config.KubernetesExecutorDeleteOnTermination.Get(c.conf)
	o.MaxExecutorFailures = max(3, 2*c.initial)
	if n := config.ExecutorMaxNumFailures.Get(c.conf); n > 0 {
		o.MaxExecutorFailures = n
	}
	o.FailuresValidityInterval = config.ExecutorFailuresValidityInterval.Get(c.conf)
	o.MissingPodDetectDelta = config.KubernetesExecutorMissingPodDetectDelta.Get(c.conf)
	o.DeletedCacheTimeout = config.KubernetesExecutorDeletedExecutorsCacheTimeout.Get(c.conf)
	o.StartTimeout = config.KubernetesExecutorStartTimeout.Get(c.conf)
	o.EventProcessingInterval = config.KubernetesExecutorEventProcessingInterval.Get(c.conf)
	return o
}
