// Package coarse is the coarse-grained scheduler backend: the driver's gRPC
// endpoint that executors register with, the executor registry with the free
// cores of each executor, resource offers made on registration and on every
// status update, removal of executors with a reason, heartbeat expiry, and
// the wait for enough executors before a job starts. Cluster managers
// (local-cluster processes, Kubernetes pods) create the executors; this
// package runs tasks on them.
package coarse
