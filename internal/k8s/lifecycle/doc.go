// Package lifecycle turns executor pod states into executor removals whose
// reasons name the cause, deletes or retires the pods of finished executors,
// watches pending pods for problems that keep them from starting, and counts
// executor failures. It is drover's counterpart of Spark's
// ExecutorPodsLifecycleManager.
//
// [Decide] is the whole policy: a pure, deterministic function of a [State],
// an [Input] (the current snapshot of the application's executor pods, the
// executors the scheduler backend has registered, the time) and [Options],
// returning [Action]s in executor-id order. [Manager] is the thin loop around
// it: it collects snapshots, runs Decide at most once per
// EventProcessingInterval and hands the actions to an [Applier].
//
// The rules, beyond Spark's mapping (deleted → not the application's fault;
// failed or succeeded → the application's exit, then delete the pod or label
// it inactive):
//
//   - a loss names its cause: OOM-killed with the container's memory limit,
//     evicted with the kubelet's message, the meaning of the exit code of a Go
//     executor, lost with its node, preempted or drained, deleted by a user or
//     the cluster, or deleted by the driver itself. "Deleted by the driver"
//     only when the driver asked first: a pod seen being deleted before it
//     asked, or whose status names a cause of the cluster's, was not the
//     driver's doing (an executor that leaves on SIGTERM is dropped by the
//     driver, which then deletes its pod too);
//   - a loss says whether the executor had registered: State remembers the
//     registered executors until their pods are gone for
//     DeletedCacheTimeout, since the backend forgets an executor it removes,
//     often before its pod's end is seen;
//   - pending pods are checked for image, container-configuration and
//     scheduling problems; the user is told once per pod (aggregated over pods
//     with the same problem), and pods whose problem outlasts its grace period
//     are deleted and counted as executor failures, except unschedulable pods,
//     which keep waiting;
//   - the application fails, with the last cause, when executor failures
//     within spark.executor.failuresValidityInterval exceed
//     spark.executor.maxNumFailures, or when no executor has been able to start
//     for drover.kubernetes.executor.startTimeout;
//   - pods that vanish from the informer's cache, and registered executors
//     whose pod a full list does not contain, are removed as deleted or
//     missing.
package lifecycle
