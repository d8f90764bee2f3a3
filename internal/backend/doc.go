// Package backend defines what the driver needs from a cluster manager: a
// SchedulerBackend that turns the task scheduler's decisions into work on
// executors, and an ExecutorAllocationClient that grows and shrinks the set
// of executors. The coarse subpackage implements the executor side shared by
// every cluster manager that runs executors as separate processes.
package backend
