package k8s

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/allocator"
	"github.com/drover-project/drover/internal/k8s/podsource"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// The pod source loop: snapshots of the executor pods for the allocator and
// the lifecycle manager.

// PodSource is the watch of the application's executor pods that the
// snapshots are taken from: podsource.Source, or a test's.
type PodSource interface {
	Run(ctx context.Context)
	WaitSynced(ctx context.Context) error
	Changed() <-chan struct{}
	Take() (pods []*snapshot.Pod, touched map[executorid.ID]bool, relisted bool)
	Behind(listRV string, pods []*snapshot.Pod) (bool, error)
	Relist()
	WaitPod(ctx context.Context, name string, ready func(*snapshot.Pod) bool, d time.Duration) (*snapshot.Pod, bool)
	Pods() []*snapshot.Pod
}

var _ PodSource = (*podsource.Source)(nil)

// startSource starts the one watch of the application's executor pods
// (filtered by app id and role) and the loop that turns it into snapshots,
// at most one per spark.kubernetes.allocation.batch.delay. The watch
// re-lists by itself after it expires, so no periodic LIST runs while it is
// healthy; drover.kubernetes.executor.poll.enabled adds one as a safety
// net.
func (c *Cluster) startSource(ctx context.Context) error {
	// c.src is set only now: before Start, admit and Stop see no source.
	src := c.podSource
	if src == nil {
		pods, err := podsource.NewREST(c.cs, c.ns)
		if err != nil {
			return err
		}
		src = podsource.New(pods, podsource.Options{Selector: c.selector, Clock: c.clock,
			Logger: c.log.With("component", "pods")})
	}
	c.src = src
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.src.Run(ctx) }()
	if err := c.src.WaitSynced(ctx); err != nil {
		return err
	}
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.snapshotLoop(ctx) }()
	if c.opts.Poll {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.pollLoop(ctx) }()
	}
	c.markDirty()
	return nil
}

func (c *Cluster) markDirty() {
	select {
	case c.dirty <- struct{}{}:
	default:
	}
}

// adaptiveSnapshotDelay coalesces pod events for the adaptive allocator,
// per 1,000 pods: a snapshot is a pass over every cached pod, so with many
// executors the pause grows with them and the driver's CPU per second
// stays flat, up to spark.kubernetes.allocation.batch.delay.
const adaptiveSnapshotDelay = 100 * time.Millisecond

// snapshotDelay is the pause after a snapshot of n pods.
func snapshotDelay(policy allocator.Policy, batchDelay time.Duration, n int) time.Duration {
	if policy == allocator.PolicySpark {
		return batchDelay
	}
	return min(batchDelay, adaptiveSnapshotDelay*time.Duration(max(1, (n+999)/1000)))
}

func (c *Cluster) snapshotLoop(ctx context.Context) {
	// Spark coalesces pod events per batch delay. The adaptive allocator
	// starts its next round as soon as the cluster admitted the last one,
	// so it hears of pods sooner (a snapshot costs a pass over the cached
	// pods, no API request).
	batchDelay := c.opts.Allocator.BatchDelay
	policy := c.opts.Allocator.Policy
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.dirty:
		case <-c.src.Changed():
		}
		// The source holds only this application's executor pods (its
		// watch has c.selector): matching the selector again per pod cost
		// about as much as the rest of a snapshot.
		pods, touched, relisted := c.src.Take()
		c.publish(pods, touched, relisted)
		select {
		case <-ctx.Done():
			return
		case <-c.clock.After(snapshotDelay(policy, batchDelay, len(pods))):
		}
	}
}

// pollLoop lists the pods every spark.kubernetes.executor.apiPollingInterval,
// from the API server's watch cache (resourceVersion=0), in case a watch
// event was lost. It publishes nothing itself: when a list newer than the
// watch's view disagrees with it, the watch lists again (podsource.Relist),
// and one stream of snapshots goes on, the next one a full list. Two
// streams (the poll's and the watch's) showed a pod, then not, and the
// allocator created it again.
func (c *Cluster) pollLoop(ctx context.Context) {
	t := c.clock.NewTicker(c.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		list, err := c.cs.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: c.selector.String(), ResourceVersion: "0"})
		if err != nil {
			c.log.Warn("polling executor pods", "err", err)
			continue
		}
		pods := make([]*snapshot.Pod, len(list.Items))
		for i := range list.Items {
			pods[i] = snapshot.NewPod(&list.Items[i])
		}
		switch behind, err := c.src.Behind(list.ResourceVersion, pods); {
		case err != nil:
			c.log.Warn("polling executor pods", "err", err)
		case behind:
			c.log.Warn("the executor pod watch disagrees with a newer list of the pods: listing again")
			c.src.Relist()
		}
	}
}

// publish hands a snapshot of pods to the allocator and the lifecycle
// manager; full says a full list (the watch's relist) made it, so a
// registered executor whose pod it lacks has none (between lists, the
// pod's event may be late).
func (c *Cluster) publish(pods []*snapshot.Pod, touched map[executorid.ID]bool, full bool) {
	s := c.classifier.Snapshot(pods, c.clock.Now())
	ids := c.backend.RegisteredIDs()
	c.log.Debug("executor pod snapshot", "pods", len(s.Pods), "registered", len(ids))
	c.alloc.SetRegistered(ids)
	c.alloc.OnSnapshot(s, touched)
	c.life().OnSnapshot(s, full)
	c.publishPlacements(s)
}

type placement struct{ node, phase string }

// publishPlacements tells the event stream where executors' pods landed
// and their phase, when either changed since the last snapshot.
func (c *Cluster) publishPlacements(s snapshot.Snapshot) {
	if c.events == nil {
		return
	}
	c.placedMu.Lock()
	defer c.placedMu.Unlock()
	if c.placed == nil {
		c.placed = map[executorid.ID]placement{}
	}
	for id, ep := range s.Pods {
		p := placement{ep.Pod.NodeName, string(ep.Pod.Phase)}
		if c.placed[id] == p {
			continue
		}
		c.placed[id] = p
		c.events.Publish(&events.ExecutorPlaced{Executor: id, Pod: ep.Pod.Name, Node: p.node, Phase: p.phase})
	}
	for id := range c.placed {
		if _, ok := s.Pods[id]; !ok {
			delete(c.placed, id)
		}
	}
}
