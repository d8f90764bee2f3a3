// Package install is drover operator install: the operator's CRDs (from
// internal/operator/crds), its ServiceAccount with the least rights its
// controller uses (a ClusterRole for the applications and drover's pods,
// config maps, Secrets and services in every namespace; a Role for leader
// election's Lease in its own namespace), and the Deployment that runs
// drover operator; as YAML or applied server-side. Drivers' accounts are
// drover rbac's (internal/k8s/submit.RBAC), for the namespaces named.
package install
