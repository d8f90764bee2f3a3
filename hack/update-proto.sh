#!/usr/bin/env bash
# Regenerates the committed gRPC/protobuf code. protoc comes from Debian's
# protobuf-compiler; the Go plugins are pinned in hack/tools/go.mod.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
bin="$(mktemp -d)"; trap 'rm -rf "$bin"' EXIT
GOBIN="$bin" go install -modfile=hack/tools/go.mod google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc
PATH="$bin:$PATH" protoc -I internal/rpc/pb \
	--go_out=internal/rpc/pb --go_opt=paths=source_relative \
	--go-grpc_out=internal/rpc/pb --go-grpc_opt=paths=source_relative \
	internal/rpc/pb/drover.proto
