package coarse

import (
	"sync"

	"github.com/drover-project/drover/internal/rpc/pb"
)

// outbox queues messages for the one goroutine that sends on an executor's
// stream. Launches queued while a send is in flight are merged into one
// batch.
type outbox struct {
	mu     sync.Mutex
	msgs   []*pb.DriverMessage
	closed bool
	notify chan struct{}
}

func newOutbox() *outbox { return &outbox{notify: make(chan struct{}, 1)} }

func (o *outbox) add(m *pb.DriverMessage) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	if l := m.GetLaunch(); l != nil && len(o.msgs) > 0 {
		if prev := o.msgs[len(o.msgs)-1].GetLaunch(); prev != nil {
			prev.Tasks = append(prev.Tasks, l.Tasks...)
			o.mu.Unlock()
			return
		}
	}
	o.msgs = append(o.msgs, m)
	// Signal under the lock, so close cannot race with the send.
	select {
	case o.notify <- struct{}{}:
	default:
	}
	o.mu.Unlock()
}

func (o *outbox) take() []*pb.DriverMessage {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.msgs
	o.msgs = nil
	return m
}

func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		close(o.notify)
	}
}
