// Package scheduler is the driver's task scheduler: it turns task sets into
// task launches on resource offers, retries failed tasks up to
// spark.task.maxFailures keeping the failure reasons, resubmits the tasks of
// an executor lost for reasons outside the application without counting them
// as failures, and cancels jobs. It is pure scheduling logic: it never talks
// to the network or to Kubernetes; a Backend carries its decisions out.
package scheduler
