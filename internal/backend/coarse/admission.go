package coarse

import (
	"errors"
	"net/netip"
	"time"

	"github.com/drover-project/drover/internal/executorid"
)

// Who may register: the cluster manager's Admit hook, the ids that may
// not register again, and the refusals a peer may have.

// Registration is what an Admit hook decides on: what the executor says of
// itself, and where its connection comes from.
type Registration struct {
	ID executorid.ID
	// PodName is the pod the executor says it runs in, "" if it names none.
	PodName string
	// Peer is the address the executor's control connection comes from
	// (IPv4-mapped addresses unmapped); the zero Addr when unknown.
	Peer netip.Addr
	// Address is where the executor says it serves results and shuffle
	// blocks (host:port): the driver fetches results there.
	Address string
}

// Errors an Admit hook wraps to say what its refusal means. Any other
// refusal tells the executor to stop (PermissionDenied) and leaves the id
// free: the refused connection may not be the executor's own, whose
// registration is still to come.
var (
	// ErrGone refuses an executor whose id is done with for good (its pod
	// was deleted or ended): the id may never register again. Only for
	// ids the cluster manager issued, so that nobody can use refusals to
	// keep ids from the executors they will be given to.
	ErrGone = errors.New("the executor is gone")
	// ErrNotYet refuses an executor the cluster manager cannot tell about
	// yet (its pod's address is not known yet): the executor tries again
	// (Unavailable), and the refusal counts against no one.
	ErrNotYet = errors.New("not known yet")
)

// maxExcluded bounds the ids kept from registering again; past it the
// oldest exclusions are forgotten. Ids enter only by the driver's own
// decisions (removals, ErrGone of an issued id), so that takes as many
// executors removed; by then the oldest are long gone, and a cluster
// manager that checks more (Kubernetes: the pod, its address) refuses them
// anyway.
const maxExcluded = 1 << 16

// excludedIDs are the executor ids that may not register again, at most
// maxExcluded of them.
type excludedIDs struct {
	set   map[executorid.ID]struct{}
	order []executorid.ID // oldest first
}

func (x *excludedIDs) has(id executorid.ID) bool {
	_, ok := x.set[id]
	return ok
}

func (x *excludedIDs) add(id executorid.ID) {
	if x.set == nil {
		x.set = map[executorid.ID]struct{}{}
	}
	if x.has(id) {
		return
	}
	x.set[id] = struct{}{}
	x.order = append(x.order, id)
	if len(x.order) > maxExcluded {
		delete(x.set, x.order[0])
		// The dropped head is freed when append next copies the slice.
		x.order = x.order[1:]
	}
}

// Refused registrations are limited per peer address: a peer may have
// failureBurst refusals, and one more each failureRefill; past that its
// registrations are refused at once (ResourceExhausted, which executors
// retry). A holder of the executors' credentials so cannot try ids or pod
// names quickly, while an executor refused once in a while (a late pod
// watch is ErrNotYet and counts for nothing) is not held up. Executors of
// one node on the host network share an address, hence the burst.
const (
	failureBurst  = 10
	failureRefill = 3 * time.Second
	// maxFailurePeers bounds the peers tracked; a peer whose allowance is
	// whole again is forgotten first.
	maxFailurePeers = 4096
)

// maxAdmittingPerPeer bounds the registrations of one peer address that
// the Admit hook decides on at once (it may wait for a pod's IP): more are
// told to try again (Unavailable), not counted as refusals. Executors of
// one node on the host network share an address.
const maxAdmittingPerPeer = 16

// failureLimiter is a token bucket of refusals per peer. The backend's
// lock guards it.
type failureLimiter struct {
	peers map[netip.Addr]*failureBucket
}

type failureBucket struct {
	tokens float64
	at     time.Time
}

// refill returns how many refusals the bucket allows at now.
func (b *failureBucket) refill(now time.Time) float64 {
	return min(failureBurst, b.tokens+float64(now.Sub(b.at))/float64(failureRefill))
}

// allowed reports whether peer may try to register at now.
func (l *failureLimiter) allowed(peer netip.Addr, now time.Time) bool {
	b := l.peers[peer]
	return b == nil || b.refill(now) >= 1
}

// failed records a refused registration of peer at now.
func (l *failureLimiter) failed(peer netip.Addr, now time.Time) {
	if l.peers == nil {
		l.peers = map[netip.Addr]*failureBucket{}
	}
	b := l.peers[peer]
	if b == nil {
		if len(l.peers) >= maxFailurePeers {
			l.prune(now)
		}
		b = &failureBucket{tokens: failureBurst, at: now}
		l.peers[peer] = b
	}
	b.tokens, b.at = max(0, b.refill(now)-1), now
}

// prune forgets the peers whose allowance is whole again; if none is,
// half of the peers, whichever they are: many addresses evade a limit per
// address anyway.
func (l *failureLimiter) prune(now time.Time) {
	for p, b := range l.peers {
		if b.refill(now) >= failureBurst {
			delete(l.peers, p)
		}
	}
	for p := range l.peers {
		if len(l.peers) < maxFailurePeers/2 {
			break
		}
		delete(l.peers, p)
	}
}
