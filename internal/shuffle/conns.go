package shuffle

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/utils/clock"
)

var errManagerClosed = errors.New("shuffle manager is closed")

// peerConns is the manager's bounded cache of client connections to other
// executors' block servers, one per address (Spark's
// numConnectionsPerPeer=1; gRPC multiplexes concurrent fetches on it).
// Without a bound an executor of an N-executor job would end up holding N-1
// sockets for its whole life. A connection is reference-counted while
// fetches use it and never closed under them; unused ones sit in an LRU list,
// from which the least recently used is closed when a new peer needs room,
// and those unused for idleTimeout are closed by a sweep that runs on every
// acquire and release (no timer per connection, no goroutine).
type peerConns struct {
	clock clock.PassiveClock
	// dial is called with mu held.
	dial func(address string) (*grpc.ClientConn, error)

	mu sync.Mutex
	// limit and idleTimeout change with Manager.SetPeerLimits.
	limit       int
	idleTimeout time.Duration
	peers       map[string]*peerConn
	// unused holds the peers with refs == 0, most recently released first.
	unused list.List
	// closing counts evicted connections whose Close has not returned yet:
	// they still count against limit, so a new connection is only opened
	// once the one it replaces is gone.
	closing int
	// waiters are the acquirers waiting for room, oldest first, each with
	// a channel of capacity 1. A connection becoming unused or a place freed
	// wakes one, so thousands of waiting fetches cost one wake-up per
	// release, not one each.
	waiters list.List
	closed  bool
}

type peerConn struct {
	address  string
	cc       *grpc.ClientConn
	refs     int
	lastUsed time.Time
	elem     *list.Element // in unused while refs == 0
}

// acquire returns the connection to address, opening it if needed, and holds
// it until release. When limit connections are open and all in use, it waits
// for one to be released, or for ctx.
func (p *peerConns) acquire(ctx context.Context, address string) (*peerConn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errManagerClosed
		}
		victims := p.sweepLocked()
		if pc, ok := p.peers[address]; ok {
			p.useLocked(pc)
			p.mu.Unlock()
			p.closeAll(victims, len(victims))
			return pc, nil
		}
		if len(p.peers)+p.closing < p.limit {
			cc, err := p.dial(address)
			if err != nil {
				p.mu.Unlock()
				p.closeAll(victims, len(victims))
				return nil, fmt.Errorf("dial %s: %w", address, err)
			}
			pc := &peerConn{address: address, cc: cc, refs: 1}
			p.peers[address] = pc
			p.mu.Unlock()
			p.closeAll(victims, len(victims))
			return pc, nil
		}
		if back := p.unused.Back(); back != nil && len(victims) == 0 {
			victims = append(victims, p.evictLocked(back.Value.(*peerConn)))
		}
		if len(victims) > 0 {
			// Closing them makes room for this acquirer and others.
			p.mu.Unlock()
			p.closeAll(victims, len(victims)-1)
			continue
		}
		wake := make(chan struct{}, 1)
		e := p.waiters.PushBack(wake)
		limit := p.limit
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			p.mu.Lock()
			if e.Value != nil {
				p.waiters.Remove(e)
				e.Value = nil
			} else {
				// Woken as well: pass the turn on.
				p.wakeLocked(1)
			}
			p.mu.Unlock()
			return nil, fmt.Errorf("waiting for a connection to %s (%d open, all in use): %w", address, limit, ctx.Err())
		}
	}
}

// release ends one use of pc taken by acquire.
func (p *peerConns) release(pc *peerConn) {
	p.mu.Lock()
	if p.peers[pc.address] != pc {
		// Closed with the manager while in use.
		p.mu.Unlock()
		return
	}
	pc.refs--
	if pc.refs == 0 {
		pc.lastUsed = p.clock.Now()
		pc.elem = p.unused.PushFront(pc)
		p.wakeLocked(1)
	}
	victims := p.sweepLocked()
	p.mu.Unlock()
	p.closeAll(victims, len(victims))
}

// maxConns is the most connections the cache keeps open.
func (p *peerConns) maxConns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limit
}

// open returns the number of connections open or closing, for tests.
func (p *peerConns) open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.peers) + p.closing
}

// closeAllPeers closes every connection, in use or not, and makes acquire
// fail from now on.
func (p *peerConns) closeAllPeers() error {
	p.mu.Lock()
	p.closed = true
	peers := p.peers
	p.peers = map[string]*peerConn{}
	p.unused.Init()
	p.wakeLocked(p.waiters.Len())
	p.mu.Unlock()
	var errs []error
	for _, pc := range peers {
		if err := pc.cc.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *peerConns) useLocked(pc *peerConn) {
	if pc.elem != nil {
		p.unused.Remove(pc.elem)
		pc.elem = nil
	}
	pc.refs++
}

// sweepLocked evicts the unused connections idle for idleTimeout or longer;
// the caller closes them after unlocking.
func (p *peerConns) sweepLocked() []*peerConn {
	var victims []*peerConn
	now := p.clock.Now()
	for back := p.unused.Back(); back != nil; back = p.unused.Back() {
		pc := back.Value.(*peerConn)
		if now.Sub(pc.lastUsed) < p.idleTimeout {
			break
		}
		victims = append(victims, p.evictLocked(pc))
	}
	return victims
}

func (p *peerConns) evictLocked(pc *peerConn) *peerConn {
	p.unused.Remove(pc.elem)
	pc.elem = nil
	delete(p.peers, pc.address)
	p.closing++
	return pc
}

// closeAll closes evicted connections outside the lock (closing a TLS
// connection may write) and then frees their places, waking wake waiters
// (one per place, one fewer when the caller needs one of the places itself).
func (p *peerConns) closeAll(victims []*peerConn, wake int) {
	if len(victims) == 0 {
		return
	}
	for _, pc := range victims {
		// The connection had no RPC in progress; an error here only means
		// it was already broken.
		_ = pc.cc.Close()
	}
	p.mu.Lock()
	p.closing -= len(victims)
	p.wakeLocked(wake)
	p.mu.Unlock()
}

// wakeLocked wakes the n oldest waiters.
func (p *peerConns) wakeLocked(n int) {
	for ; n > 0 && p.waiters.Len() > 0; n-- {
		e := p.waiters.Front()
		p.waiters.Remove(e)
		e.Value.(chan struct{}) <- struct{}{}
		e.Value = nil
	}
}
