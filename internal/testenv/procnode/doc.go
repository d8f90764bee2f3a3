// Package procnode is a node agent that runs Kubernetes pods as local OS
// processes. It registers one or more Nodes, keeps them Ready with a lease in
// kube-node-lease, and runs every pod bound to them: each container's command
// is executed on this machine (images are ignored, except that images from a
// registry on the .invalid domain cannot be pulled), each pod gets its own
// loopback address (127.x.y.z) as its pod IP, and the pod's status follows a
// kubelet's (Pending, Running, Succeeded or Failed with exit codes and
// reasons). Deleting a pod signals its processes the way a kubelet does:
// SIGTERM to each container's process group, SIGKILL after the grace period,
// then the pod object is removed.
//
// It exists so that drover's end-to-end tests and dev cluster can run real
// driver and executor processes in real pods on a real control plane without
// a container runtime.
//
// Supported: command and args with $(VAR) expansion; env with value,
// fieldRef, resourceFieldRef, secretKeyRef and configMapKeyRef; envFrom;
// emptyDir, secret, configMap, downwardAPI, projected (including service
// account tokens) and hostPath volumes, materialised in a per-pod directory
// whose path is exported to the container as DROVER_VOLUME_<NAME> (the mount
// path itself is not honoured: processes share this machine's filesystem);
// restart policies Never, OnFailure and Always with the kubelet's restart
// count, last termination state and CrashLoopBackOff (10s doubling to 300s,
// shortened only by Config.InitialBackoff and MaxBackoff in tests);
// spec.activeDeadlineSeconds, also when set or lowered on a running pod
// (its containers are killed as on deletion, none restarts, and the pod
// fails with reason DeadlineExceeded); init containers, run in order before
// the app containers; Agent.Signal, for tests that crash (SIGKILL) or
// freeze (SIGSTOP, SIGCONT) a running container; container logs through
// Logs and through the kubelet API (kubectl logs) when the API server is given
// a client certificate the agent trusts. Not supported: probes (containers are
// ready once started), resource limits, exec/attach/port-forward, images
// (but an image such as registry.invalid/app:1 fails to pull: its containers
// wait with ErrImagePull and ImagePullBackOff and the pod stays Pending, see
// UnpullableImage).
package procnode
