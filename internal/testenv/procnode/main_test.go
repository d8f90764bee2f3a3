//go:build !integration

package procnode

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's unit tests if a goroutine they started
// outlives them (a process's waiter, a log copier, a pod's worker). The
// integration build's tests share a control plane, stopped after them, and
// have a TestMain of their own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
