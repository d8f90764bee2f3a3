package dynalloc

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/executorid"
)

// Killed executors stay registered until their pods are gone; the manager
// forgets they are being removed and on the next tick removes more
// executors, below minExecutors.
func TestKilledExecutorsStayPendingRemovalUntilTheyGo(t *testing.T) {
	m, _, client, clk, execs := newManager(false)
	*execs = []executorid.ID{1, 2, 3, 4}
	m.Config.Min = 2
	m.state = NewState(m.Config)
	m.state.Target, m.state.Initializing = 2, false
	m.tick(clk.Now())
	clk.Step(11 * time.Second)
	m.tick(clk.Now()) // removes two: 4 alive, keep 2
	// The killed executors are still registered 100 ms later.
	clk.Step(100 * time.Millisecond)
	m.tick(clk.Now())
	if len(client.killed) > 2 {
		t.Errorf("killed %v: %d executors with minExecutors = 2 and 4 registered", client.killed, len(client.killed))
	}
}
