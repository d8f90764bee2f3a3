#!/usr/bin/env bash
# Builds the Kueue controller manager, the queue drover's queue tests run
# under, from its Go module (pinned in hack/kueue) into
# ~/.cache/drover/kueue/<version>/kueue, with its CRDs (crd/) and webhooks'
# manifest (webhook/). Built only when missing, so a warm rerun costs
# nothing. The last line of the output is the directory.
set -euo pipefail

KUEUE_VERSION=v0.19.2
here="$(cd "$(dirname "$0")" && pwd)"
cache="${DROVER_CACHE:-$HOME/.cache/drover}"
out="$cache/kueue/$KUEUE_VERSION"
mkdir -p "$out"

if [[ -x "$out/kueue" && -d "$out/crd" && -f "$out/webhook/manifests.yaml" ]]; then
	echo "$out"
	exit 0
fi

start=$SECONDS
if [[ ! -x "$out/kueue" ]]; then
	echo "drover: building kueue $KUEUE_VERSION into $out (first time only; about 20 minutes on two cores)" >&2
	# Progress every 30 s, so a long build is not mistaken for a hang.
	( while sleep 30; do echo "drover: still building kueue ($(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s)" >&2; done ) &
	ticker=$!
	trap 'kill $ticker 2>/dev/null || true' EXIT

	# Built into a staging name and moved into place, so an interrupted build
	# never leaves a binary that looks complete.
	stage="$out/.kueue.$$"
	if ! (cd "$here/kueue" && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w" \
		-o "$stage" sigs.k8s.io/kueue/cmd/kueue); then
		rm -f "$stage"
		echo "drover: building kueue failed (see above)" >&2
		exit 1
	fi
	mv "$stage" "$out/kueue"
	echo "drover: built kueue in $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s" >&2
fi

# The CRDs and the webhooks' manifest come with the module's source: the
# test environment installs them (the webhooks pointed at the controller on
# loopback) before it starts the controller.
src="$(cd "$here/kueue" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)"
rm -rf "$out/crd" "$out/webhook" && mkdir -p "$out/crd" "$out/webhook"
cp "$src"/config/components/crd/bases/*.yaml "$out/crd/"
cp "$src"/config/components/webhook/manifests.yaml "$out/webhook/"
chmod -R u+w "$out/crd" "$out/webhook"
echo "$out"
