package k8s

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/executorid"
)

// adoptionWait bounds the wait of a restarted driver for the executors of
// earlier attempts: they retry within spark.network.timeout, so one that
// has not registered by then is not coming back.
func (c *Cluster) adoptionWait() time.Duration {
	if d := c.app.Coarse.NetworkTimeout; d > 0 {
		return d
	}
	return 2 * time.Minute
}

// awaitAdoption holds a restarted driver back until every running
// executor pod of its earlier attempts has registered again, naming the
// map outputs it holds, or ended: a stage planned before would compute
// again what such an executor still holds. The first attempt, and a
// driver that cannot restart, do not wait.
func (c *Cluster) awaitAdoption(ctx context.Context) {
	if c.app.Attempt.Epoch == 0 {
		return
	}
	start := c.clock.Now()
	ticker := c.clock.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	deadline := start.Add(c.adoptionWait())
	for {
		waiting := c.unregisteredPods()
		if len(waiting) == 0 {
			c.log.Info("the executors of the earlier attempts registered again", "waited", c.clock.Since(start).Round(time.Millisecond))
			return
		}
		if !c.clock.Now().Before(deadline) {
			c.log.Warn("executors of an earlier attempt did not register again; their outputs will be computed again",
				"executors", waiting)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// unregisteredPods are the executors whose pods run but which have not
// registered with this attempt.
func (c *Cluster) unregisteredPods() []executorid.ID {
	registered := c.backend.RegisteredIDs()
	var out []executorid.ID
	for _, p := range c.src.Pods() {
		if p.Phase == corev1.PodRunning && !podGone(p) && !registered[p.ID] {
			out = append(out, p.ID)
		}
	}
	return out
}
