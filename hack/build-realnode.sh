#!/usr/bin/env bash
# Builds what the real-node tests (issue 42) run beside the control plane:
# kubelet, in the same pinned module as the other Kubernetes binaries
# (hack/build-testbin.sh kubelet, into ~/.cache/drover/k8s/<version>/), and
# containerd, its runc shim (containerd-shim-runc-v2) and ctr from
# containerd's Go module (pinned in hack/containerd)
# into ~/.cache/drover/containerd/<version>/. The two builds run side by side;
# each binary is built only when missing, so a warm rerun costs nothing and
# make test's own binaries never wait for these. runc and the CNI plugins
# come from Debian (hack/install-test-packages.sh). The last two lines of
# the output are the Kubernetes directory, then containerd's.
#
# --containerd-only leaves kubelet to a build-testbin.sh run going on beside
# (make testbins names it there: one go build of the Kubernetes module then
# compiles the packages kubelet shares with the other binaries once).
set -euo pipefail
with_kubelet=yes
case "${1:-}" in
"") ;;
--containerd-only) with_kubelet="" ;;
*) echo "usage: hack/build-realnode.sh [--containerd-only]" >&2; exit 2 ;;
esac

CONTAINERD_VERSION=v2.4.2
here="$(cd "$(dirname "$0")" && pwd)"
cache="${DROVER_CACHE:-$HOME/.cache/drover}"
cout="$cache/containerd/$CONTAINERD_VERSION"
mkdir -p "$cout"

build_containerd() {
	if [[ -x "$cout/containerd" && -x "$cout/containerd-shim-runc-v2" && -x "$cout/ctr" ]]; then
		return 0
	fi
	echo "drover: building containerd $CONTAINERD_VERSION, its runc shim and ctr into $cout (first time only; a few minutes on two cores)" >&2
	local start=$SECONDS
	( while sleep 30; do echo "drover: still building containerd ($(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s)" >&2; done ) &
	local ticker=$!
	# Built into a staging directory and moved into place, so an
	# interrupted build never leaves a binary that looks complete. Without
	# cgo the btrfs snapshotter drops out (its build tag wants cgo); the
	# tests use overlayfs or native.
	local stage="$cout/.stage.$$" v="github.com/containerd/containerd/v2/version"
	rm -rf "$stage" && mkdir -p "$stage"
	if ! (cd "$here/containerd" && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X $v.Version=${CONTAINERD_VERSION#v} -X $v.Revision=drover -X $v.Package=github.com/containerd/containerd/v2" \
		-o "$stage/" github.com/containerd/containerd/v2/cmd/containerd \
		github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr); then
		kill "$ticker" 2>/dev/null || true
		rm -rf "$stage"
		echo "drover: building containerd failed (see above)" >&2
		return 1
	fi
	kill "$ticker" 2>/dev/null || true
	mv "$stage"/* "$cout/"
	rmdir "$stage"
	echo "drover: built containerd, its shim and ctr in $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s" >&2
}

kdir_file="$(mktemp)"
trap 'rm -f "$kdir_file"' EXIT
k=""
if [[ -n "$with_kubelet" ]]; then
	"$here/build-testbin.sh" kubelet >"$kdir_file" & k=$!
fi
build_containerd & c=$!
failed=0
if [[ -n "$k" ]]; then wait "$k" || failed=1; fi
wait "$c" || failed=1
if [[ $failed -ne 0 ]]; then
	echo "drover: building the real-node binaries failed (see above)" >&2
	exit 1
fi
if [[ -n "$with_kubelet" ]]; then tail -1 "$kdir_file"; fi
echo "$cout"
