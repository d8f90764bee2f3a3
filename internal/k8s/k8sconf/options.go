package k8sconf

import (
	"fmt"
	"os"
	"path"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/allocator"
	"github.com/drover-project/drover/internal/k8s/client"
	"github.com/drover-project/drover/internal/k8s/lifecycle"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/settings"
)

// Options are the Kubernetes cluster manager's settings, read from the
// configuration and checked once, by Load.
type Options struct {
	AppID     string
	Namespace string
	// InitialExecutors is the first target; MinRegisteredRatio the share
	// of it the scheduler waits for (Spark's 0.8 for Kubernetes unless
	// set).
	InitialExecutors   int
	MinRegisteredRatio float64
	// DriverHost is what executors dial, BindAddress where the driver
	// listens, on DriverPort.
	DriverHost, BindAddress string
	DriverPort              int
	// DriverPodName is the driver's pod ("" in client mode without one);
	// DriverServiceAccount is the account it was submitted with.
	DriverPodName, DriverServiceAccount string
	// CheckPeerAddress: registrations are checked against their pods' IPs.
	CheckPeerAddress bool
	// Poll lists the executor pods every PollInterval besides watching.
	Poll         bool
	PollInterval time.Duration

	Allocator allocator.Options
	// Lifecycle lacks the container name, which Executor has.
	Lifecycle lifecycle.Options
	// Executor is the executor pods' configuration, to be bound to the
	// driver's pod and URL once it runs (podspec.ExecutorConf.Bind).
	Executor *podspec.ExecutorConf
	// ExecutorConfig is the explicit configuration but for its sensitive
	// entries (ExecutorConfig), which the executor config map carries.
	ExecutorConfig map[string]string
	// Queue is the queue the executors wait in, QueueTimeout how long
	// they may all wait; PodGroup is the Volcano PodGroup a client-mode
	// driver creates (nil otherwise: drover submit made a cluster-mode
	// one).
	Queue        podspec.Queue
	QueueTimeout time.Duration
	PodGroup     *unstructured.Unstructured
	// Client builds the API client (the API server and user agent are the
	// caller's).
	Client client.Options
}

// Load checks conf with CheckConf, then reads the cluster manager's
// options of application appID. getenv is the driver's environment (its
// pod's IP, where credential files are mounted, whether it runs in a pod).
func Load(conf *config.Conf, appID string, getenv func(string) string) (Options, error) {
	if err := CheckConf(conf, appID, nil); err != nil {
		return Options{}, err
	}
	// Everything below was checked by CheckConf: its errors are nil.
	o := Options{
		AppID:                appID,
		Namespace:            config.KubernetesNamespace.Get(conf),
		MinRegisteredRatio:   0.8, // Spark's default for Kubernetes
		DriverPort:           config.DriverPort.Get(conf),
		DriverPodName:        config.KubernetesDriverPodName.Get(conf),
		DriverServiceAccount: config.KubernetesDriverServiceAccountName.Get(conf),
		CheckPeerAddress:     config.KubernetesExecutorCheckPeerAddress.Get(conf),
		Poll:                 config.KubernetesExecutorPollEnabled.Get(conf),
		PollInterval:         config.KubernetesExecutorAPIPollingInterval.Get(conf),
		Allocator:            AllocatorOptions(conf),
		ExecutorConfig:       ExecutorConfig(conf.Explicit()),
		QueueTimeout:         config.KubernetesQueueTimeout.Get(conf),
		Client:               ClientOptions(conf, authKeys(conf, getenv), getenv),
	}
	o.InitialExecutors, _ = settings.InitialExecutors(conf)
	if config.MinRegisteredResourcesRatio.IsSet(conf) {
		o.MinRegisteredRatio = config.MinRegisteredResourcesRatio.Get(conf)
	}
	o.DriverHost, o.BindAddress = driverAddress(conf, getenv)
	o.Lifecycle = lifecycleOptions(conf, o.InitialExecutors)
	o.Queue, _ = Queue(conf, appID)
	exe, _ := ExecutorBinary(conf)
	ec, err := ParseExecutorConf(conf, appID, []string{exe})
	if err != nil {
		return Options{}, err
	}
	o.Executor = ec
	if o.Queue.System == podspec.QueueVolcano && config.DeployMode.Get(conf) != "cluster" {
		if o.PodGroup, err = VolcanoPodGroup(conf, appID, false); err != nil {
			return Options{}, err
		}
	}
	return o, nil
}

// ExecutorConfig is conf, an explicit configuration, without its sensitive
// entries: the values of secret keys and of keys or values that
// spark.redaction.regex (of conf) matches. The executor ConfigMap carries
// what is left (podspec.ExecutorConfigMap); the executors get their
// credentials from their environment.
func ExecutorConfig(conf map[string]string) map[string]string {
	all := config.New()
	for k, v := range conf {
		all.Set(k, v)
	}
	redacted := all.Redacted()
	out := make(map[string]string, len(conf))
	for k, v := range conf {
		if redacted[k] == v {
			out[k] = v
		}
	}
	return out
}

// AllocatorOptions are the allocator's settings from the configuration.
func AllocatorOptions(conf *config.Conf) allocator.Options {
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
	// A mistake in the queue's settings is ExecutorConf's to report.
	q, _ := Queue(conf, "")
	o.Gang = q.Gang
	return o
}

// lifecycleOptions are the lifecycle manager's options from the
// configuration, for initial executors.
func lifecycleOptions(conf *config.Conf, initial int) lifecycle.Options {
	o := lifecycle.DefaultOptions()
	o.DeleteOnTermination = config.KubernetesExecutorDeleteOnTermination.Get(conf)
	o.MaxExecutorFailures = max(3, 2*initial)
	if n := config.ExecutorMaxNumFailures.Get(conf); n > 0 {
		o.MaxExecutorFailures = n
	}
	o.FailuresValidityInterval = config.ExecutorFailuresValidityInterval.Get(conf)
	o.MissingPodDetectDelta = config.KubernetesExecutorMissingPodDetectDelta.Get(conf)
	o.DeletedCacheTimeout = config.KubernetesExecutorDeletedExecutorsCacheTimeout.Get(conf)
	o.StartTimeout = config.KubernetesExecutorStartTimeout.Get(conf)
	o.EventProcessingInterval = config.KubernetesExecutorEventProcessingInterval.Get(conf)
	return o
}

// ExecutorBinary is the executor container's command: the application
// binary's path in the image.
func ExecutorBinary(conf *config.Conf) (string, error) {
	if bin := config.KubernetesExecutorBinary.Get(conf); bin != "" {
		if !path.IsAbs(bin) {
			return "", fmt.Errorf("%s=%s: expected the absolute path of the application binary in the executor image",
				config.KubernetesExecutorBinary.Key(), bin)
		}
		return bin, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the application binary for executor pods (set %s): %w", config.KubernetesExecutorBinary.Key(), err)
	}
	return exe, nil
}
