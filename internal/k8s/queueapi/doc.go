// Package queueapi reaches the queue systems' objects drover has no Go
// types for, through the clientset's untyped REST client: Kueue's
// LocalQueues (does the application's queue exist?) and Volcano's
// PodGroups (created, owned, deleted). drover submit and the driver's
// cluster manager both use it, so it depends on neither.
package queueapi
