// Package envvar declares every environment variable drover's processes
// exchange: who sets each one, and who reads it. Nothing else declares
// these names.
//
// Three kinds of variable live here. The executor contract is what a
// cluster manager (local-cluster's process launcher, or the executor pod
// spec built by internal/k8s/podspec) sets when it starts the application
// binary as an executor; internal/executor reads it. The driver pod's
// contract is set by the driver pod spec (downward API) and read by the
// cluster-mode driver. The process-node stand-ins are set only by the
// process node of the dev cluster and the tests (internal/testenv/procnode),
// which runs pods as local processes and so cannot mount volumes at their
// paths: real kubelets never set them, and every reader falls back to the
// standard path without them.
package envvar
