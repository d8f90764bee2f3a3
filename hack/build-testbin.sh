#!/usr/bin/env bash
# Builds the Kubernetes components drover's tests and dev cluster run — etcd,
# kube-apiserver, kube-scheduler, kube-controller-manager, kubectl and kwok —
# from their Go modules into ~/.cache/drover/k8s/<version>/. Each binary is
# built only when missing, so a warm rerun costs nothing.
set -euo pipefail

K8S_VERSION=v1.36.3
KWOK_VERSION=v0.8.0
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

build() { # build <module dir> <name> <package> [ldflags]
	local dir="$1" name="$2" pkg="$3" flags="${4:-}"
	if [[ -x "$out/$name" ]]; then return; fi
	echo "drover: building $name (first time only; this takes minutes)..." >&2
	local start=$SECONDS
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$flags" -o "$out/$name.tmp" "$pkg")
	mv "$out/$name.tmp" "$out/$name"
	echo "drover: built $name in $((SECONDS - start))s" >&2
}

build "$here/testbin" etcd ./etcd "-s -w"
for c in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
	build "$here/testbin" "$c" "k8s.io/kubernetes/cmd/$c" "$ldflags"
done
build "$here/kwok" kwok sigs.k8s.io/kwok/cmd/kwok "-s -w"

# kwok needs stage definitions; copy the ones its module ships.
if [[ ! -d "$out/kwok-stages" ]]; then
	src="$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
	rm -rf "$out/kwok-stages.tmp"
	cp -r "$src" "$out/kwok-stages.tmp"
	chmod -R u+w "$out/kwok-stages.tmp"
	mv "$out/kwok-stages.tmp" "$out/kwok-stages"
fi
echo "$out"
