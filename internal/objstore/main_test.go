package objstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine they started outlives
// them (an upload's part workers, a reader's prefetch).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
