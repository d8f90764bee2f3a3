package keptlog

import (
	"io"
	"sync"
)

// Pending holds a process's output from its first byte until the Writer
// that keeps it exists: a driver knows its attempt, an executor where to
// write, only some time after it started. Attach passes what it holds on
// and every later Write; Discard (the logs are not kept) drops it and
// holds nothing more. Past max bytes held, the oldest are dropped.
type Pending struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	dropped int64
	to      io.Writer // after Attach
	off     bool      // after Discard
}

// DefaultPendingBytes bounds what a Pending holds.
const DefaultPendingBytes = 4 << 20

// NewPending returns a Pending that holds at most max bytes (a default
// when max ≤ 0).
func NewPending(max int) *Pending {
	if max <= 0 {
		max = DefaultPendingBytes
	}
	return &Pending{max: max}
}

// Write holds p, or passes it on once attached; it never fails.
func (p *Pending) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.to != nil:
		_, _ = p.to.Write(b) // a Writer never fails
	case p.off:
	default:
		p.buf = append(p.buf, b...)
		if over := len(p.buf) - p.max; over > 0 {
			p.dropped += int64(over)
			p.buf = append(p.buf[:0], p.buf[over:]...)
		}
	}
	return len(b), nil
}

// Attach sends what p holds to w, then every later Write. It returns the
// bytes dropped while p held them.
func (p *Pending) Attach(w io.Writer) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		_, _ = w.Write(p.buf)
	}
	p.buf, p.to = nil, w
	return p.dropped
}

// Discard drops what p holds and every later Write.
func (p *Pending) Discard() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf, p.off = nil, true
}
