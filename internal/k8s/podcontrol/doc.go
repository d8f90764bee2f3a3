// Package podcontrol creates and deletes the executors' pods, as the
// Kubernetes Job controller's PodControl does for a Job's: one interface
// for the allocator, the lifecycle manager and Stop, a real implementation
// that talks to the API server, and a fake one that records calls for unit
// tests.
package podcontrol
