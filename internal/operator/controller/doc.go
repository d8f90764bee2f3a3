// Package controller is drover's operator: the controller that runs
// DroverApplications (drover.io/v1alpha1) with drover submit's own code,
// in-process, and the controller-runtime manager `drover operator` runs.
//
//   - [Decide] is the state machine, pure: from an object's status, spec
//     and current driver pod (and the time) to its next status and one
//     action (submit the next attempt, delete the driver pod when
//     suspended, delete the object when its time to live ran out);
//     [Submitted] folds a submission's outcome into the status.
//   - [Reconciler] reads those inputs from the manager's cache and applies
//     the decision: submit.Prepare and Plan.Create for a submission,
//     a status write only when the status changed, an event per
//     transition.
//   - [NewManager] and [Run] build and run the manager with [Options]:
//     caches of drover's pods only, an index of pods by application id,
//     leader election, metrics and probes.
//
// Idempotent by construction: an attempt's application id, and with it
// its driver pod's, config map's and Secret's names, derive from the
// object's UID and the attempt number ([AppID]), so a controller
// restarted between creating the pod and recording it finds the pod
// (AlreadyExists) and adopts it, and the API server never holds two
// driver pods of one attempt. The driver pod is owned by the object, so
// deleting the object deletes everything.
package controller
