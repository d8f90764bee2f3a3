package procnode

import (
	"fmt"
	"time"
)

// The kubelet's crash-loop back-off (pkg/kubelet: backOffPeriod and
// MaxContainerBackOff).
const (
	DefaultInitialBackoff = 10 * time.Second
	DefaultMaxBackoff     = 300 * time.Second
)

// backoffPolicy is the kubelet's container restart back-off: a
// flowcontrol.Backoff without jitter, keyed by container, asked at every
// restart whether the container is still backing off since it last exited.
type backoffPolicy struct {
	initial, max time.Duration
}

// backoffEntry is what the kubelet remembers per container: the current
// back-off and when it last let the container restart. The zero value is no
// entry.
type backoffEntry struct {
	backoff    time.Duration
	lastUpdate time.Time
}

// expired is flowcontrol's rule: a container that ran for twice the maximum
// back-off since its last restart (10 minutes by default) starts over.
func (p backoffPolicy) expired(e backoffEntry, finished time.Time) bool {
	return e.backoff == 0 || finished.Sub(e.lastUpdate) > 2*p.max
}

// decide says, at now, whether a container that exited at finished may
// restart. If it may, wait is 0 and next is the entry to keep (the kubelet's
// Backoff.Next). Otherwise wait is how long it still backs off and next is e
// unchanged: the kubelet's IsInBackOffSince. So the first restart is
// immediate, the next ones wait 10s, 20s, 40s … up to 300s.
func (p backoffPolicy) decide(e backoffEntry, finished, now time.Time) (wait time.Duration, next backoffEntry) {
	if !p.expired(e, finished) {
		if since := now.Sub(finished); since < e.backoff {
			return e.backoff - since, e
		}
		return 0, backoffEntry{backoff: min(2*e.backoff, p.max), lastUpdate: now}
	}
	return 0, backoffEntry{backoff: p.initial, lastUpdate: now}
}

// crashLoopMessage is the waiting message of a container backing off, as
// the kubelet words it (format.Pod: name_namespace(uid)).
func crashLoopMessage(backoff time.Duration, container, pod, namespace, uid string) string {
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backoff, container, pod, namespace, uid)
}
