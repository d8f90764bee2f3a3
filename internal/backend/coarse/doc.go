// Package coarse is the coarse-grained scheduler backend: the driver's gRPC
// endpoint that executors register with, the executor registry with the free
// cores of each executor, resource offers made on registration and on every
// status update, removal of executors with a reason, heartbeat expiry, and
// the wait for enough executors before a job starts. Cluster managers
// (local-cluster processes, Kubernetes pods) create the executors, and may
// admit each registration (Options.Admit, told the connection's address);
// this package keeps removed ids from registering again (a bounded set,
// entered only by the driver's own decisions) and limits the refused
// registrations of each peer address, and runs tasks on the executors.
package coarse
