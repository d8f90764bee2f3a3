// Package podsource is the driver's view of its executor pods: one
// reflector (a list, then a watch) filtered by the application's labels,
// feeding a store that knows which executors changed since the last
// snapshot was taken, and the health of the watch.
//
// The store is written by the reflector itself, not by informer event
// handlers that run later on their own goroutine, so a snapshot and the
// set of executors it covers are taken under one lock: an executor that
// changed is always reflected in the snapshot that reports the change. An
// allocator that clears its expectations from that set can therefore never
// see a pod's event before the pod (the cause of double creation that
// Spark shares, SPARK-44609).
//
// The source lists and watches through a Pods. NewREST's, the driver's,
// lists and watches in protobuf and decodes straight into snapshot.Pods
// (snapshot.DecodePod), never into a corev1.Pod: a watched pod's managed
// fields, environment and probes, which the driver does not read, cost
// more to decode than everything it does. It needs an API server (a fake
// clientset has no REST client): unit tests over a fake clientset pass a
// Pods of their own over its typed client.
package podsource
