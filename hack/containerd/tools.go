//go:build tools

// Package containerd pins containerd, the container runtime the real-node
// tests run under their kubelet (hack/build-realnode.sh builds it).
package containerd

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
