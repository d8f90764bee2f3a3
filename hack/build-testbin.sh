#!/usr/bin/env bash
# Builds the Kubernetes components drover's tests and dev cluster run — etcd,
# kube-apiserver, kube-scheduler, kube-controller-manager, kubectl and kwok —
# from their Go modules into ~/.cache/drover/k8s/<version>/. With arguments,
# only the named ones (make demo needs neither kwok nor kubectl); without,
# all of them, which make test needs. kubelet, which only the real-node
# tests run (hack/build-realnode.sh), is built only when named. Each binary
# is built only when missing, so a warm rerun costs nothing. The last line
# of the output is the directory.
set -euo pipefail

K8S_VERSION=v1.36.3
here="$(cd "$(dirname "$0")" && pwd)"
cache="${DROVER_CACHE:-$HOME/.cache/drover}"
out="$cache/k8s/$K8S_VERSION"
mkdir -p "$out"

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION \
 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

wanted=("$@")
if [[ ${#wanted[@]} -eq 0 ]]; then
	wanted=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok)
fi

# The missing binaries of the testbin module (etcd and Kubernetes) and
# whether kwok (its own module) is missing.
pkgs=() names=() kwok=""
for name in "${wanted[@]}"; do
	[[ -x "$out/$name" ]] && continue
	case "$name" in
	etcd) pkgs+=(./etcd) ;;
	kube-apiserver | kube-scheduler | kube-controller-manager | kubectl | kubelet) pkgs+=("k8s.io/kubernetes/cmd/$name") ;;
	kwok) kwok=yes; continue ;;
	*) echo "drover: build-testbin.sh: unknown binary $name (want etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kubectl, kubelet or kwok)" >&2; exit 2 ;;
	esac
	names+=("$name")
done

# build <label> <module dir> <ldflags> <package>...: one go build of several
# main packages into a staging directory, then moved into place. One go
# build shares the packages the binaries have in common and keeps every core
# busy, where building them one at a time left half the machine idle.
build() {
	local label="$1" dir="$2" flags="$3"
	shift 3
	local stage="$out/.stage.$label.$$"
	rm -rf "$stage" && mkdir -p "$stage"
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$flags" -o "$stage/" "$@")
	mv "$stage"/* "$out/"
	rmdir "$stage"
}

if [[ ${#names[@]} -eq 0 && -z "$kwok" ]]; then
	echo "$out"
	exit 0
fi
building="${names[*]}${kwok:+ kwok}"
echo "drover: building ${building# } into $out (first time only; several minutes on two cores)" >&2
start=$SECONDS
# Progress every 30 s, so a long build is not mistaken for a hang.
( while sleep 30; do echo "drover: still building ${building# } ($(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s)" >&2; done ) &
ticker=$!
trap 'kill $ticker 2>/dev/null || true' EXIT

pids=()
if [[ ${#pkgs[@]} -gt 0 ]]; then
	build testbin "$here/testbin" "$ldflags" "${pkgs[@]}" &
	pids+=($!)
fi
if [[ -n "$kwok" ]]; then
	build kwok "$here/kwok" "-s -w" sigs.k8s.io/kwok/cmd/kwok &
	pids+=($!)
fi
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
if [[ $failed -ne 0 ]]; then
	echo "drover: building the Kubernetes binaries failed (see above)" >&2
	exit 1
fi

# kwok needs stage definitions; copy the ones its module ships.
if [[ -n "$kwok" || ( " ${wanted[*]} " == *" kwok "* && ! -d "$out/kwok-stages" ) ]]; then
	src="$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
	rm -rf "$out/kwok-stages.tmp"
	cp -r "$src" "$out/kwok-stages.tmp"
	chmod -R u+w "$out/kwok-stages.tmp"
	rm -rf "$out/kwok-stages"
	mv "$out/kwok-stages.tmp" "$out/kwok-stages"
fi
echo "drover: built ${building# } in $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s" >&2
echo "$out"
