// Package submit is drover's submission client for Kubernetes, Spark's
// KubernetesClientApplication, Client, LoggingPodStatusWatcher and
// K8SSparkSubmitOperation in one place:
//
//   - [Prepare] resolves a cluster-mode submission (the driver pod, its
//     headless service and its configuration) and reports every bad input
//     before anything exists; [Plan.Create] creates the driver pod first,
//     then the config map and the service owned by it, and deletes what it
//     created when a later step fails;
//   - [Watcher] follows the application's pods with one informer (which
//     re-lists after a watch expires, 410 Gone, so no outcome is lost),
//     prints state changes and a status line every
//     spark.kubernetes.report.interval (executors running and pending, and
//     what holds the others back while the driver's pod says a cap does),
//     and returns the driver's outcome (a driver that failed while its pod
//     was being deleted counts as deleted);
//   - [Find], [Status] and [Kill] act on submission ids namespace:name,
//     where the name is a driver pod's or an application id (how
//     client-mode applications, whose driver is no pod, are named) and
//     may end in * (a glob over both); [DriverState] judges from the API
//     objects alone whether such a driver is gone;
//   - [RBAC] is the least-privilege ServiceAccount, Role and RoleBinding
//     of a cluster-mode driver, and the ValidatingAdmissionPolicy and
//     binding that confine it to its own application's objects (see
//     rbac_policy.go for the rule);
//   - [ForwardUI] is drover ui: a port-forward to a driver's web UI and,
//     when the UI asks for the application's token (which [Prepare] makes
//     and keeps in the driver's Secret), a local proxy that adds it and
//     admits the browser that opens its one-time login link.
package submit
