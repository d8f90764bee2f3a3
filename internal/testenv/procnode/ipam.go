package procnode

import (
	"fmt"
	"net/netip"
	"sync"
)

// ipPool hands out loopback addresses to pods. Linux routes all of
// 127.0.0.0/8 to the loopback interface, so every address in the pool can be
// listened on without configuring anything, and two pods can listen on the
// same port as they would on separate pod IPs in a real cluster.
//
// Allocation is round-robin (like host-local IPAM) so an address freed by a
// finished pod is reused only after the rest of the pool, which keeps stale
// clients of a dead pod from reaching its successor.
type ipPool struct {
	mu     sync.Mutex
	prefix netip.Prefix
	size   int // usable addresses: all but the prefix's first
	next   int // offset of the next address to try
	used   map[netip.Addr]bool
}

func newIPPool(prefix netip.Prefix) (*ipPool, error) {
	prefix = prefix.Masked()
	if !prefix.Addr().Is4() || prefix.Bits() < 8 || !netip.MustParsePrefix("127.0.0.0/8").Contains(prefix.Addr()) {
		return nil, fmt.Errorf("pod CIDR %s is not inside 127.0.0.0/8", prefix)
	}
	if prefix.Contains(netip.AddrFrom4([4]byte{127, 0, 0, 1})) {
		return nil, fmt.Errorf("pod CIDR %s holds 127.0.0.1, the node's own address", prefix)
	}
	if prefix.Bits() > 30 {
		return nil, fmt.Errorf("pod CIDR %s is too small", prefix)
	}
	return &ipPool{prefix: prefix, size: 1<<(32-prefix.Bits()) - 1, used: map[netip.Addr]bool{}}, nil
}

// allocate returns a free address.
func (p *ipPool) allocate() (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	base := p.prefix.Addr().As4()
	b := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	for range p.size {
		off := p.next
		p.next = (p.next + 1) % p.size
		v := b + 1 + uint32(off) // +1 skips the prefix's first address
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		if !p.used[a] {
			p.used[a] = true
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free pod IP in %s: %d pods hold all of them", p.prefix, len(p.used))
}

// release returns a to the pool; releasing a free address does nothing.
func (p *ipPool) release(a netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, a)
}
