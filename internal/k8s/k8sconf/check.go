package k8sconf

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/settings"
)

// CheckConf checks, without an API server, every setting the Kubernetes
// cluster manager reads: executor counts, allocation, and the executor pod
// (image, template, resources, labels, volumes, secrets), by building one
// with the functions the driver uses. drover submit calls it so a bad
// setting fails the submission before any object exists; Load calls it so
// a client-mode driver fails before it creates anything. driverPod is the
// driver's pod as submitted, nil in client mode. The error joins every
// problem found, each naming its key.
func CheckConf(conf *config.Conf, appID string, driverPod *corev1.Pod) error {
	return config.Invalid(checkConf(conf, appID, driverPod))
}

func checkConf(conf *config.Conf, appID string, driverPod *corev1.Pod) error {
	var errs []error
	if _, err := settings.InitialExecutors(conf); err != nil {
		errs = append(errs, err)
	}
	if err := AllocatorOptions(conf).Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := ExecutorBinary(conf); err != nil {
		errs = append(errs, err)
	}
	if config.KubernetesDriverRestartPolicy.Get(conf) != "Never" && config.DeployMode.Get(conf) != "cluster" {
		errs = append(errs, fmt.Errorf("%s=%s needs spark.submit.deployMode=cluster: a client-mode driver has no pod to restart",
			config.KubernetesDriverRestartPolicy.Key(), config.KubernetesDriverRestartPolicy.Get(conf)))
	}
	if driverPod != nil && driverPod.UID == "" {
		// Not created yet: any uid lets the owner reference be built.
		driverPod = driverPod.DeepCopy()
		driverPod.UID = "00000000-0000-0000-0000-000000000000"
	}
	// The executors' command and the driver's URL are only known inside
	// the driver; their values do not change what is checked.
	ec, err := ExecutorConf(conf, appID, driverPod, "drover://driver:7078", []string{"/executor"})
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
		if _, err := VolcanoPodGroup(conf, appID, driverPod != nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
