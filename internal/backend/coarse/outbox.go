package coarse

import (
	"sync"

	"github.com/drover-project/drover/internal/rpc/pb"
)

// outbox queues messages for the one goroutine that sends on an executor's
// stream. Launches queued while a send is in flight are merged into one
// batch, up to maxLaunch bytes of plans and task payloads (spark.rpc.message.maxSize),
// so no message outgrows what the RPC carries.
type outbox struct {
	mu        sync.Mutex
	msgs      []*pb.DriverMessage
	tailBytes int64 // payload bytes of the last message, when a launch
	maxLaunch int64
	closed    bool
	notify    chan struct{}
}

func newOutbox(maxLaunch int64) *outbox {
	return &outbox{notify: make(chan struct{}, 1), maxLaunch: maxLaunch}
}

// launchBytes is the plans and task payloads a launch carries.
func launchBytes(l *pb.LaunchBatch) int64 {
	var n int64
	for _, p := range l.GetPlans() {
		n += int64(len(p.GetPlan()))
	}
	for _, t := range l.GetTasks() {
		n += int64(len(t.GetPayload()))
	}
	return n
}

func (o *outbox) add(m *pb.DriverMessage) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	var size int64
	if l := m.GetLaunch(); l != nil {
		size = launchBytes(l)
		if len(o.msgs) > 0 && o.tailBytes+size <= o.maxLaunch {
			if prev := o.msgs[len(o.msgs)-1].GetLaunch(); prev != nil {
				prev.Plans = append(prev.Plans, l.Plans...)
				prev.Tasks = append(prev.Tasks, l.Tasks...)
				o.tailBytes += size
				o.mu.Unlock()
				return
			}
		}
	}
	o.msgs = append(o.msgs, m)
	o.tailBytes = size
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
	o.msgs, o.tailBytes = nil, 0
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
