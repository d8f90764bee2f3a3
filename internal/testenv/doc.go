// Package testenv runs a real Kubernetes control plane on loopback for
// drover's integration tests and dev cluster: etcd and kube-apiserver, and on
// request kube-scheduler, kube-controller-manager (garbage collection,
// namespaces, service accounts, node lifecycle), kwok with simulated nodes,
// process nodes (package procnode) that run pods as local processes, and the
// Kueue controller manager (built by hack/build-kueue.sh, found in
// $DROVER_KUEUE or ~/.cache/drover/kueue/<version>/) with its CRDs and
// webhooks, managing the pods of namespaces made with NewKueueNamespace.
//
// The components are binaries built from their Go modules by
// hack/build-testbin.sh (make testbin) into ~/.cache/drover/k8s/<version>/,
// or found in $DROVER_TESTBIN. Each runs in its own process group with its log
// in the environment's directory, and dies with the process that started it
// (Pdeathsig on Linux), so a failed or timed-out test leaves nothing running.
// The directory is the user's alone (0700), and so are the keys in it; etcd
// listens on loopback with TLS and requires a client certificate from its
// own authority, which only the API server holds, on its client and peer
// ports alike: another local user cannot reach the cluster's data.
//
// Options.APIServers runs several kube-apiservers over the one etcd, each on
// its own loopback port (Env.URLs) with the same certificates, tokens and
// service-account keys; Env.Kill and Env.Restart take each by its
// APIServerName, so tests can fail one over to another. In front of them, as
// a load balancer is in production, a loopback TCP front (Env.URL) forwards
// each connection, TLS and all, to the first server that is up; the test's
// clients (Env.Config, Env.Kubeconfig) and every component reach the API
// through it, so the cluster keeps working while any one server lives.
//
// Tests use New (skips locally when the binaries are missing, fails under
// CI=true) or share one environment per package with Shared.
//
// Why "testenv" though `drover dev-cluster` ships it: a control plane on
// loopback whose nodes are processes or simulations is a test environment,
// whoever starts it — the dev cluster is for trying drover, not for running
// work, and must never be mistaken for a cluster to deploy to. The helpers
// that take a *testing.T (New, Shared, Unavailable) are in testing.go; the
// CLI uses only Start, Env and the binaries' lookup (linking package testing
// registers no flags: nothing calls testing.Init).
package testenv
