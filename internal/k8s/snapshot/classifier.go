package snapshot

import (
	"sync"
	"time"

	"github.com/drover-project/drover/internal/executorid"
)

// Classifier takes snapshots like New, remembering each pod's entry from
// the last one: a pod the cache has not replaced since (the same pointer:
// cached pods are never changed in place) keeps its entry without being
// classified again. With thousands of executors a driver takes a snapshot
// of all of them every few hundred milliseconds. Safe for concurrent use.
type Classifier struct {
	container string

	mu   sync.Mutex
	last map[*Pod]entry
}

// entry is a pod's classification; ok is false for a pod New skips.
type entry struct {
	ep ExecutorPod
	ok bool
}

// NewClassifier returns a classifier for the executor container named
// container (as New).
func NewClassifier(container string) *Classifier {
	return &Classifier{container: container}
}

// Snapshot is New(pods, container, now), reusing the entries of pods seen
// in the previous call.
func (c *Classifier) Snapshot(pods []*Pod, now time.Time) Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{Pods: make(map[executorid.ID]ExecutorPod, len(pods)), Time: now}
	next := make(map[*Pod]entry, len(pods))
	for _, p := range pods {
		e, seen := c.last[p]
		if !seen {
			e = classify(p, c.container)
		}
		next[p] = e
		if e.ok {
			s.Pods[e.ep.ID] = e.ep
		}
	}
	c.last = next
	return s
}
