// Package master parses master URLs (spark.master) and keeps the registry
// of cluster managers that serve each kind of URL: local mode (tasks as
// goroutines in the driver), local-cluster mode (executors as processes on
// this machine) and Kubernetes (executors as pods).
package master
