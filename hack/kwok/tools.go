//go:build tools

// Package kwok pins the kwok version drover's tests simulate nodes with. It is
// a module of its own because kwok needs its own Kubernetes library versions.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
