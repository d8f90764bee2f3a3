package procnode

import (
	"context"
	"testing"
	"time"
)

// runAgent runs a until the test ends, failing the test if Run returns an
// error then, and returns once a is ready.
func runAgent(t *testing.T, a *Agent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-a.Ready():
	case err := <-done:
		t.Fatalf("Run ended before Ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("agent not ready after 30s")
	}
}
