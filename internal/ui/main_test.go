package ui

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine they started outlives
// them (a server's handlers, an event stream's writers).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
