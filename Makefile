# drover — run `make demo` and `make test` on a fresh machine; nothing else is needed.
SHELL := /bin/bash
GO ?= go
TOOLS := $(GO) tool -modfile=hack/tools/go.mod
K8S_BIN = $(shell ./hack/build-testbin.sh 2>/dev/null | tail -1)

.PHONY: fuzz getting-started demo test unit integration testbin testbins testpackages versitygw kueue lint proto docs bench bench-compare bench-k8s bench-scale build clean chaos image

## build: the drover CLI into bin/
build:
	$(GO) build -o bin/drover ./cmd/drover

## image: the application image of APP (default ./examples/wordcount) without Docker, into bin/<name>-image.tar
## tagged TAG (default drover.invalid/<name>:dev): the binary built as the Dockerfile builds it, on the same base
## (hack/image, internal/appimage). `ctr -n k8s.io images import FILE` puts it on a node (or `docker load -i FILE`);
## pods then use imagePullPolicy Never or IfNotPresent
image: APP ?= ./examples/wordcount
image: TAG ?= drover.invalid/$(notdir $(APP)):dev
image:
	$(GO) run ./hack/image --app $(APP) --tag $(TAG) -o bin/$(notdir $(APP))-image.tar

## demo: examples/wordcount in cluster mode on the dev cluster (a real control plane on loopback and an S3 store;
## builds the Kubernetes binaries and versitygw side by side the first time, several minutes), from and to its
## bucket, with its progress and result read back; cleans up after itself
demo:
	@./hack/demo.sh

## getting-started: run every sh block of docs/getting-started.md in order (part of make test)
getting-started:
	./hack/getting-started.sh

## testbin: etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kubectl and kwok from Go modules
testbin:
	@echo "drover: making sure the Kubernetes test binaries are built (minutes the first time, cached in ~/.cache/drover)"
	@./hack/build-testbin.sh

## versitygw: the S3-compatible server the object-storage tests run, from its Go module (cached in ~/.cache/drover)
versitygw:
	@./hack/build-versitygw.sh

## kueue: the Kueue controller manager the queue tests run under, from its Go module (about 20 minutes on two
## cores the first time; cached in ~/.cache/drover)
kueue:
	@./hack/build-kueue.sh

## realnodebin: what the real-node tests run beside the control plane (issue 42): kubelet, in the Kubernetes
## binaries' pinned module, and containerd, its runc shim and ctr from containerd's Go module, built side by side
## when missing (about 2.5 min cold on two cores; cached in ~/.cache/drover). make test's binaries don't include them.
.PHONY: realnodebin
realnodebin:
	@./hack/build-realnode.sh >/dev/null

## realnode: the real-node tests (TestRealNode*, verbose): the kubelet's own cases (internal/testenv), drover dev-cluster up
## --real-node (internal/cli, which makes its own namespace) and drover's
## (internal/k8s/submit: the image make image builds, word count from S3 in a restricted namespace, OOMKilled, eviction,
## SIGTERM then SIGKILL, the driver restarted in place), each package inside a network namespace made for the run
## (hack/realnode-netns.sh: lo, a private node address, the pods' CNI bridge; nothing reaches outside), on a real kubelet
## with containerd and runc. DROVER_REALNODE=1 makes a missing prerequisite fail them, not skip. Their build tag,
## realnode, keeps them out of the main go test run, which cannot be in their namespace; make test runs this after it
.PHONY: realnode
realnode: realnodebin testbin versitygw testpackages
	@dir="$$(mktemp -d)"; rc=0; \
	for pkg in internal/testenv internal/k8s/submit; do \
		$(GO) test -c -tags integration,realnode -o "$$dir/$$(basename $$pkg).test" ./$$pkg || { rc=1; break; }; \
	done; \
	if [ $$rc -eq 0 ]; then for pkg in internal/testenv internal/k8s/submit; do \
		echo "drover: real-node tests of ./$$pkg"; \
		(cd $$pkg && DROVER_REALNODE=1 DROVER_TESTBIN="$$($(CURDIR)/hack/build-testbin.sh | tail -1)" \
			DROVER_VERSITYGW="$$($(CURDIR)/hack/build-versitygw.sh | tail -1)" \
			$(CURDIR)/hack/realnode-netns.sh "$$dir/$$(basename $$pkg).test" -test.run "$${RUN:-RealNode}" -test.count=1 \
			-test.timeout=15m -test.v) || rc=1; \
	done; fi; \
	if [ $$rc -eq 0 ]; then echo "drover: real-node tests of ./internal/cli, in the host's namespace (dev-cluster up --real-node makes its own)"; \
		DROVER_REALNODE=1 DROVER_TESTBIN="$$($(CURDIR)/hack/build-testbin.sh | tail -1)" \
		DROVER_VERSITYGW="$$($(CURDIR)/hack/build-versitygw.sh | tail -1)" \
		$(GO) test -tags integration,realnode -run "$${RUN:-RealNode}" -count=1 -timeout 15m -v ./internal/cli || rc=1; fi; \
	rm -rf "$$dir"; exit $$rc

## testbins: the Kubernetes binaries, versitygw, Kueue and the real node's kubelet and containerd, built side by side
## (each only when missing)
testbins:
	@echo "drover: making sure the test binaries are built (minutes the first time, cached in ~/.cache/drover)"
	@./hack/build-testbin.sh etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok kubelet >/dev/null & k=$$!; \
		./hack/build-versitygw.sh >/dev/null & v=$$!; ./hack/build-kueue.sh >/dev/null & q=$$!; \
		./hack/build-realnode.sh --containerd-only >/dev/null & r=$$!; \
		wait $$k; kr=$$?; wait $$v; vr=$$?; wait $$q; qr=$$?; wait $$r; rr=$$?; test $$kr -eq 0 -a $$vr -eq 0 -a $$qr -eq 0 -a $$rr -eq 0

## testpackages: the Debian packages tests drive (chromium, prometheus), installed when missing under CI=true or as
## root; otherwise it says how to install them and those tests skip
testpackages:
	@if [ "$${CI:-}" = true ] || [ "$$(id -u)" = 0 ]; then ./hack/install-test-packages.sh; fi

## test: lint, then every test: the unit and integration tests (the integration build tag: a real control plane, S3
## server, Kueue, Chromium, Prometheus), then every unit test under the race detector (untagged, so a new test is
## never left out; the control-plane tests are not raced: client-go's klog races under -race)
test: lint testbins testpackages
	@echo "drover: unit and integration tests"
	DROVER_TESTBIN="$$(./hack/build-testbin.sh | tail -1)" DROVER_VERSITYGW="$$(./hack/build-versitygw.sh | tail -1)" \
		DROVER_KUEUE="$$(./hack/build-kueue.sh | tail -1)" $(GO) test -count=1 -tags integration -timeout 25m ./...
	@echo "drover: race detector on every unit test"
	$(GO) test -count=1 -race -timeout 20m ./...
	@if [ "$${CI:-}" = true ] || [ "$$(id -u)" = 0 ]; then echo "drover: the real-node tests, in their network namespace"; \
		$(MAKE) --no-print-directory realnode; \
	else echo "drover: SKIPPED the real-node tests: they need root (containerd, runc, cgroups, a network namespace); CI runs them"; fi
	@echo "drover: docs/getting-started.md, followed verbatim"
	./hack/getting-started.sh

## chaos: the fault suite on a real control plane (executor pods deleted and killed, the driver signalled or its pod
## deleted, kube-apiserver and etcd killed and restarted, quotas): right answers, exactly the pods asked for, nothing
## left behind (≈ 5 min; also part of make test)
chaos: testbin
	DROVER_TESTBIN="$$(./hack/build-testbin.sh | tail -1)" $(GO) test -count=1 -tags integration -timeout 20m -v -run 'Chaos|ResourceQuota' . ./internal/k8s/ ./internal/k8s/submit/

## fuzz: every fuzz target in the module (each `func Fuzz…` of a _test.go outside hack/: the codec with recursive and
## empty-element types, shuffle record framing, map index and block assembly, control-stream frames and a server's
## pre-registration input, snappy, pod decoding), FUZZTIME each (60s); the corpus found is kept under each package's
## testdata/fuzz, which go test replays every run
FUZZTIME ?= 60s
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' --exclude-dir=hack --exclude-dir=.git '^func Fuzz' . | sort); do \
		d=$$(dirname $${f#./}); \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "drover: $$t in ./$$d/, $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./$$d/; \
		done; \
	done

## lint: gofmt, go vet, staticcheck (pinned in hack/tools)
lint:
	@echo "drover: gofmt, go vet, staticcheck"
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '^hack/'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) vet -tags integration,realnode ./internal/testenv/ ./internal/k8s/submit/
	$(TOOLS) staticcheck ./...
	$(TOOLS) staticcheck -tags integration ./...
	$(TOOLS) staticcheck -tags integration,realnode ./internal/testenv/ ./internal/k8s/submit/

## proto: regenerate the gRPC code (needs protoc; committed output)
proto:
	./hack/update-proto.sh

## docs: regenerate docs/configuration.md from the configuration registry and docs/metrics.md from the metrics
## the driver registers
docs:
	$(GO) run ./internal/config/gendocs > docs/configuration.md
	$(GO) run ./internal/metrics/gendocs > docs/metrics.md

## bench: the benchmark suite against the limit and peers (Dask), writing docs/benchmarks.{json,md} (≈ 20 min)
bench:
	$(GO) run ./hack/bench

## bench-k8s: executor allocation on a real control plane with kwok nodes: the adaptive and spark policies and the
## raw parallel-create baseline, DROVER_SCALE_N executors (default 1000; ≈ 5 min with two 35 s idle checks)
bench-k8s: testbin
	DROVER_TESTBIN="$$(./hack/build-testbin.sh | tail -1)" $(GO) test -count=1 -tags integration -run '^$$' -bench '^BenchmarkAllocation' -benchtime 1x -timeout 25m -v ./internal/k8s/

## bench-scale: the steps too long for make bench (≈ 35 min): allocation of 10,000 executors (adaptive and the raw
## baseline), and a job of 100,000 tasks with a shuffle on 10,000 executors that loses 1,000 of them in its reduce
## stage, merged into docs/benchmarks.{json,md} with the driver's peak RSS per 1,000 executors from N = 1,000, 5,000, 10,000
bench-scale: testbin
	$(GO) run ./hack/bench -only 'kubernetes allocation N=10000,kubernetes job N=10000'

## bench-compare: run the suite again and print each figure against the committed one
bench-compare:
	$(GO) run ./hack/bench -compare

clean:
	rm -rf bin
