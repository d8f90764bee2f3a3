#!/usr/bin/env bash
# Follows docs/getting-started.md verbatim, so it cannot rot: runs its ```sh
# blocks in order in one shell. Its ```console blocks are what a user adapts
# (clone, docker, the real cluster's address); an HTML comment
# "<!-- getting-started.sh: VAR=value ... -->" after one gives the values
# this run uses instead, pointing "your cluster" at the dev cluster. The dev
# cluster's state is kept in a temporary directory, not the user's.
set -euo pipefail
cd "$(dirname "$0")/.."
doc=docs/getting-started.md

steps="$(awk '
	/^```sh$/ { on = 1; next }
	/^```/ { on = 0; next }
	on { print; next }
	/^<!-- getting-started.sh: .* -->$/ {
		sub(/^<!-- getting-started.sh: /, ""); sub(/ -->$/, "")
		print "export " $0
	}
' "$doc")"
if [[ -z "$steps" ]]; then
	echo "getting-started.sh: no sh blocks in $doc" >&2
	exit 1
fi

state="$(mktemp -d)"
cleanup() {
	XDG_STATE_HOME="$state" ./bin/drover dev-cluster down >/dev/null 2>&1 || true
	rm -rf "$state"
}
trap cleanup EXIT
echo "getting-started.sh: running the sh blocks of $doc"
start=$SECONDS
XDG_STATE_HOME="$state" bash -euo pipefail -x -c "$steps"
echo "getting-started.sh: $doc works ($((SECONDS - start))s)"
