#!/bin/sh
# make demo: examples/wordcount submitted in cluster mode to the dev cluster
# (a real control plane on loopback with a process node), started here if it
# is not up; prints the driver's progress and result, then cleans up.
set -eu
cd "$(dirname "$0")/.."

bin="$(./hack/build-testbin.sh etcd kube-apiserver kube-scheduler kube-controller-manager kubectl | tail -1)"
kubectl="$bin/kubectl"
echo "drover: building the drover CLI and examples/wordcount"
go build -o bin/drover ./cmd/drover
go build -o bin/wordcount ./examples/wordcount

started=""
if ! ./bin/drover dev-cluster status 2>/dev/null | grep -q "^up"; then
	./bin/drover dev-cluster up >/dev/null
	started=yes
fi
eval "$(./bin/drover dev-cluster env)"
server="$("$kubectl" config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
ns=drover-demo

cleanup() {
	"$kubectl" delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true
	if [ -n "$started" ]; then
		./bin/drover dev-cluster down >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

# A namespace that enforces the restricted Pod Security profile, and the
# least-privilege service account the driver runs as.
"$kubectl" create namespace "$ns" --dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null
"$kubectl" label namespace "$ns" pod-security.kubernetes.io/enforce=restricted --overwrite >/dev/null
./bin/drover rbac --namespace "$ns" | "$kubectl" apply -f - >/dev/null

echo "drover: submitting examples/wordcount in cluster mode to $server"
./bin/drover submit --master "k8s://$server" --deploy-mode cluster --name wordcount \
	--conf spark.kubernetes.namespace="$ns" \
	--conf spark.kubernetes.container.image=drover-demo:latest \
	--conf spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver \
	--num-executors 2 --executor-memory 512m --driver-memory 512m \
	"local://$PWD/bin/wordcount" "$PWD/README.md" 10

driver="$("$kubectl" -n "$ns" get pods -l spark-role=driver -o jsonpath='{.items[0].metadata.name}')"
echo "drover: the ten most frequent words of README.md, from the driver's log:"
"$kubectl" -n "$ns" logs "$driver" | grep -v '^time='
