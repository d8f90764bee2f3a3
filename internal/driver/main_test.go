package driver

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine Run started (the bus's
// consumers, the UI's server, the progress bar, the local backend)
// outlives it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
