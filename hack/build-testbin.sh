#!/usr/bin/env bash
# Builds the Kubernetes components drover's tests and dev cluster run — etcd,
# kube-apiserver, kube-scheduler, kube-controller-manager, kubectl and kwok —
# from their Go modules into ~/.cache/drover/k8s/<version>/, two at a time
# ($DROVER_BUILD_JOBS). With arguments, only the named ones. Each binary is
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
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$flags" -o "$out/$name.tmp.$$" "$pkg")
	mv "$out/$name.tmp.$$" "$out/$name"
	echo "drover: built $name in $((SECONDS - start))s" >&2
}

# Which binaries: the arguments, or all of them. make demo needs no kwok.
wanted=("$@")
if [[ ${#wanted[@]} -eq 0 ]]; then
	wanted=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok)
fi

# Two builds at a time: one go build keeps two cores only about half busy
# (linking and the large packages are serial), two overlap well. The
# slowest (kube-apiserver, kube-controller-manager) start first.
order=(kube-apiserver kube-controller-manager kwok kubectl etcd kube-scheduler)
pids=()
failed=0
for name in "${order[@]}"; do
	case " ${wanted[*]} " in *" $name "*) ;; *) continue ;; esac
	case "$name" in
	etcd) build "$here/testbin" etcd ./etcd "-s -w" & ;;
	kwok) build "$here/kwok" kwok sigs.k8s.io/kwok/cmd/kwok "-s -w" & ;;
	*) build "$here/testbin" "$name" "k8s.io/kubernetes/cmd/$name" "$ldflags" & ;;
	esac
	pids+=($!)
	if [[ ${#pids[@]} -ge ${DROVER_BUILD_JOBS:-2} ]]; then
		wait "${pids[0]}" || failed=1
		pids=("${pids[@]:1}")
	fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
if [[ $failed -ne 0 ]]; then
	echo "drover: building the Kubernetes binaries failed (see above)" >&2
	exit 1
fi

# kwok needs stage definitions; copy the ones its module ships.
if [[ " ${wanted[*]} " == *" kwok "* && ! -d "$out/kwok-stages" ]]; then
	src="$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
	rm -rf "$out/kwok-stages.tmp"
	cp -r "$src" "$out/kwok-stages.tmp"
	chmod -R u+w "$out/kwok-stages.tmp"
	mv "$out/kwok-stages.tmp" "$out/kwok-stages"
fi
echo "$out"
