package allocator

import "math"

// sparkRound is how many executors Spark's allocator requests now (its
// step 6 with one resource profile): none while any create of its previous
// round is unseen and unregistered, otherwise the shortfall, at most
// BatchSize and at most what maxPendingPods leaves.
func sparkRound(c Counts, target int, o Options) int {
	if c.Unseen > 0 || c.Total() >= target {
		return 0
	}
	maxPending := o.MaxPendingPods
	if maxPending == 0 {
		maxPending = math.MaxInt // Spark's default, Int.MaxValue
	}
	room := maxPending - c.NotRunning()
	if room <= 0 {
		return 0
	}
	return min(target-c.Total(), o.BatchSize, room)
}
