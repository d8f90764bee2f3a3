// Package client builds the Kubernetes client of a driver or of drover
// submit: from the pod's service account inside a cluster, else from a
// kubeconfig file (KUBECONFIG or ~/.kube/config, spark.kubernetes.context),
// with spark.kubernetes.authenticate.* overrides and a request budget
// (drover.kubernetes.client.qps / .burst) that keeps the driver kind to the
// API server. client-go's klog output is routed into the driver's slog,
// and its request-metric hooks into internal/metrics (metrics.go).
package client
