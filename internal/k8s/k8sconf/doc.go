// Package k8sconf turns an application's configuration into the typed
// options of the Kubernetes side (the cluster manager, its allocator,
// lifecycle manager and executor pods, and the API client), once, and
// checks it. drover submit and the driver both check with it, so a bad
// setting fails the same way in both, and the CLI need not link the
// driver's cluster manager to do so.
//
// It also resolves the configuration into internal/k8s/podspec's typed
// structs ([ExecutorConf], [ParseExecutorConf], [DriverConf], [Queue],
// [VolcanoPodGroup]), reading the pod and PodGroup template files, so that
// podspec builds API objects without reading configuration.
package k8sconf
