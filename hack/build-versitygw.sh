#!/usr/bin/env bash
# Builds versitygw, the S3-compatible server drover's object-storage tests run
# against, from its Go module (pinned in hack/versitygw) into
# ~/.cache/drover/versitygw/<version>/versitygw. Built only when missing, so a
# warm rerun costs nothing. The last line of the output is the directory.
set -euo pipefail

VERSITYGW_VERSION=v1.8.0
here="$(cd "$(dirname "$0")" && pwd)"
cache="${DROVER_CACHE:-$HOME/.cache/drover}"
out="$cache/versitygw/$VERSITYGW_VERSION"
mkdir -p "$out"

if [[ -x "$out/versitygw" ]]; then
	echo "$out"
	exit 0
fi

echo "drover: building versitygw $VERSITYGW_VERSION into $out (first time only; a few minutes on two cores)" >&2
start=$SECONDS
# Progress every 30 s, so a long build is not mistaken for a hang.
( while sleep 30; do echo "drover: still building versitygw ($(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s)" >&2; done ) &
ticker=$!
trap 'kill $ticker 2>/dev/null || true' EXIT

# Built into a staging name and moved into place, so an interrupted build
# never leaves a binary that looks complete.
stage="$out/.versitygw.$$"
if ! (cd "$here/versitygw" && CGO_ENABLED=0 go build -trimpath \
	-ldflags "-s -w -X main.Version=$VERSITYGW_VERSION" \
	-o "$stage" github.com/versity/versitygw/cmd/versitygw); then
	rm -f "$stage"
	echo "drover: building versitygw failed (see above)" >&2
	exit 1
fi
mv "$stage" "$out/versitygw"
echo "drover: built versitygw in $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s" >&2
echo "$out"
