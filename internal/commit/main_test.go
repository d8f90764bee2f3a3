package commit

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine they started (a
// commit's completions) outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
