#!/usr/bin/env bash
# Installs the Debian packages that tests drive as real programs, when missing:
# chromium (the web UI's browser test), prometheus (the metrics scrape test),
# and runc and the CNI plugins (containernetworking-plugins, in
# /usr/lib/cni), which the real node's containerd runs (issue 42), with
# iproute2's ip and util-linux's unshare, which make its network namespace.
# make test calls it under CI=true or as root; elsewhere it prints the command.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v runc >/dev/null 2>&1 || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v unshare >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && [ "${CI:-}" = true ]; then
	sudo=sudo
fi
if { [ "$(id -u)" != 0 ] && [ -z "$sudo" ]; } || ! command -v apt-get >/dev/null 2>&1; then
	echo "drover: tests that need ${need[*]} will skip; install with: sudo apt-get install ${need[*]}" >&2
	# CI must run them: a missing package fails there, not skips.
	[ "${CI:-}" != true ]
	exit
fi
echo "drover: installing ${need[*]} for the browser, metrics and real-node tests (apt-get)"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
