#!/usr/bin/env bash
# make demo: examples/wordcount submitted in cluster mode to the dev cluster
# (a real control plane on loopback with a process node), started here if it
# is not up; prints the driver's progress and result, then cleans up. Needs
# no kubectl: drover creates the driver's account and prints its log.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
./hack/build-testbin.sh etcd kube-apiserver kube-scheduler kube-controller-manager >/dev/null
echo "drover: building the drover CLI and examples/wordcount"
go build -o bin/drover ./cmd/drover
go build -o bin/wordcount ./examples/wordcount

started=""
if ! ./bin/drover dev-cluster status 2>/dev/null | grep -q "^up"; then
	./bin/drover dev-cluster up >/dev/null
	started=yes
fi
eval "$(./bin/drover dev-cluster env)"
ns=drover-demo
out="$(mktemp)"

cleanup() {
	rm -f "$out"
	if [ -n "$started" ]; then
		./bin/drover dev-cluster down >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

# A namespace that enforces the restricted Pod Security profile, and the
# least-privilege service account the driver runs as.
./bin/drover rbac --apply --namespace "$ns" --create-namespace --pod-security restricted --master "$DROVER_DEV_MASTER" >/dev/null

echo "drover: submitting examples/wordcount in cluster mode to $DROVER_DEV_MASTER"
./bin/drover submit --master "$DROVER_DEV_MASTER" --deploy-mode cluster --name wordcount \
	--conf spark.kubernetes.namespace="$ns" \
	--conf spark.kubernetes.container.image=drover-demo:latest \
	--conf spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver \
	--num-executors 2 --executor-memory 512m --driver-memory 512m \
	"local://$PWD/bin/wordcount" "$PWD/README.md" 10 2>&1 | tee "$out"
driver="$(sed -n 's/^drover: submitted \([^ ]*\) .*/\1/p' "$out" | head -1)"
echo "drover: the ten most frequent words of README.md, from the driver's log (drover logs $driver):"
./bin/drover logs --master "$DROVER_DEV_MASTER" "$driver" | grep -v '^time='
if [ -z "$started" ]; then
	echo "drover: the dev cluster was up before; namespace $ns stays (drover kill '$ns:*' removes its applications)"
fi
echo "drover: demo done in $(( $(date +%s) - start ))s"
