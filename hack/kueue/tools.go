//go:build tools

// Package kueue pins the Kueue controller manager that drover's queue tests
// run against (hack/build-kueue.sh builds it).
package kueue

import _ "sigs.k8s.io/kueue/cmd/kueue"
