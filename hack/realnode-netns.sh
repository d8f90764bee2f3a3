#!/usr/bin/env bash
# Runs a command inside a network namespace made for this run, as the
# real-node tests need (issue 42): `unshare --net`, loopback up, and an
# interface drover0 with a private address (10.87.0.1/32) for the kubelet's
# --node-ip, since the kubelet refuses a loopback one. drover0 is a bridge
# without ports, not a dummy: this kernel has no dummy driver ("Error:
# Unknown device type."); a local address needs no carrier. drover0 also
# holds 10.0.0.1, the ClusterIP of the "kubernetes" Service (testenv's
# --service-cluster-ip-range is 10.0.0.0/24), which the kubelet gives pods
# as KUBERNETES_SERVICE_HOST: with no kube-proxy, a server listening on
# 10.0.0.1:443 inside the namespace is what pods reach there. The namespace has no
# other interface and no route out, so nothing started inside — the control
# plane, containerd, the kubelet, pods on the CNI bridge with their own
# 10.88.0.0/16 — can reach, or be reached from, any address outside it. It
# disappears when the command ends.
#
#   hack/realnode-netns.sh ./testenv.test -test.run RealNode -test.v
set -euo pipefail
if [[ $# -eq 0 ]]; then
	echo "usage: hack/realnode-netns.sh COMMAND [ARG...]" >&2
	exit 2
fi
if [[ "${DROVER_IN_RUN_NETNS:-}" != 1 ]]; then
	exec env DROVER_IN_RUN_NETNS=1 unshare --net -- "$0" "$@"
fi
ip link set lo up
ip link add drover0 type bridge
ip addr add 10.87.0.1/32 dev drover0
ip addr add 10.0.0.1/32 dev drover0
ip link set drover0 up
exec "$@"
