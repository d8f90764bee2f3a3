#!/usr/bin/env bash
# make demo: examples/wordcount submitted in cluster mode to the dev cluster
# (a real control plane on loopback with a process node and an S3 object
# store), started here if it is not up. The input is uploaded to the bucket
# and the counts are written back to it by the executors, so no pod reads a
# local file; the result is printed as read back from the bucket, then
# everything is cleaned up. Needs no kubectl and no AWS CLI.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
# The control plane and versitygw, built side by side when missing (two
# separate go builds keep both cores busy).
./hack/build-testbin.sh etcd kube-apiserver kube-scheduler kube-controller-manager >/dev/null & k8s=$!
./hack/build-versitygw.sh >/dev/null & s3=$!
wait $k8s || { wait $s3 || true; echo "drover: building the Kubernetes binaries failed" >&2; exit 1; }
wait $s3 || { echo "drover: building versitygw failed" >&2; exit 1; }
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

# A fresh prefix per run: a dev cluster that was up keeps earlier runs'
# output, and SaveAsTextFile refuses to overwrite.
run="demo/$(date +%Y%m%d-%H%M%S)-$$"
input="s3://$DROVER_DEV_S3_BUCKET/$run/input/"
output="s3://$DROVER_DEV_S3_BUCKET/$run/counts"
./bin/drover dev-cluster put README.md "$input"

# The pods' credentials come from the Secret the dev cluster puts in every
# namespace, as a real cluster's Secret or workload identity would give them;
# the driver passes only the endpoint settings on to its executors.
echo "drover: submitting examples/wordcount in cluster mode to $DROVER_DEV_MASTER: $input -> $output"
./bin/drover submit --master "$DROVER_DEV_MASTER" --deploy-mode cluster --name wordcount \
	--conf spark.kubernetes.namespace="$ns" \
	--conf spark.kubernetes.container.image=drover-demo:latest \
	--conf spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver \
	--conf spark.hadoop.fs.s3a.endpoint="$DROVER_DEV_S3_ENDPOINT" \
	--conf spark.hadoop.fs.s3a.path.style.access=true \
	--conf spark.kubernetes.driver.secretKeyRef.AWS_ACCESS_KEY_ID="$DROVER_DEV_S3_SECRET:AWS_ACCESS_KEY_ID" \
	--conf spark.kubernetes.driver.secretKeyRef.AWS_SECRET_ACCESS_KEY="$DROVER_DEV_S3_SECRET:AWS_SECRET_ACCESS_KEY" \
	--conf spark.kubernetes.executor.secretKeyRef.AWS_ACCESS_KEY_ID="$DROVER_DEV_S3_SECRET:AWS_ACCESS_KEY_ID" \
	--conf spark.kubernetes.executor.secretKeyRef.AWS_SECRET_ACCESS_KEY="$DROVER_DEV_S3_SECRET:AWS_SECRET_ACCESS_KEY" \
	--num-executors 2 --executor-memory 512m --driver-memory 512m \
	"local://$PWD/bin/wordcount" "$input" 10 "$output" 2>&1 | tee "$out"
echo "drover: the ten most frequent words of README.md, read back from $output/:"
./bin/drover dev-cluster cat "$output/" | sort -t"$(printf '\t')" -k2,2nr -k1,1 | sed -n 1,10p
if [ -z "$started" ]; then
	echo "drover: the dev cluster was up before; namespace $ns and s3://$DROVER_DEV_S3_BUCKET/$run/ stay (drover kill '$ns:*' removes its applications)"
fi
echo "drover: demo done in $(( $(date +%s) - start ))s"
