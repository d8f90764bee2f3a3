package coarse

import (
	"sync"

	"github.com/drover-project/drover/internal/rpc/pb"
)

// outbox queues the messages for an executor's stream. No goroutine waits
// on it while it is empty: a sender starts when a message arrives and ends
// once the queue is drained, so an idle executor costs the driver no
// goroutine of its own beyond its stream's handler (at 10,000 executors,
// 10,000 parked senders were 40 MiB of stacks). One sender at most runs at
// a time, which keeps the messages in order. Launches queued while a send
// is in flight are merged into one batch, up to maxLaunch bytes of plans
// and task payloads (spark.rpc.message.maxSize), so no message outgrows
// what the RPC carries.
type outbox struct {
	mu        sync.Mutex
	msgs      []*pb.DriverMessage
	tailBytes int64 // payload bytes of the last message, when a launch
	maxLaunch int64
	// send is the stream's, once start set it; nil before (messages wait).
	// spawn runs a sender: the stream's pooled goroutines (see
	// ctl.ServerStream.Go).
	send  func(*pb.DriverMessage) error
	spawn func(func())
	// sending is set while a sender goroutine runs; failed once a send
	// failed (the stream is gone: later messages are dropped).
	sending, failed bool
	closed          bool
	// flushed is closed once the outbox is closed and no sender runs;
	// close makes it, so that an open outbox (a registered executor's)
	// holds no channel.
	flushed   chan struct{}
	isFlushed bool
}

func newOutbox(maxLaunch int64) *outbox {
	return &outbox{maxLaunch: maxLaunch}
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
	if o.closed || o.failed {
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
	o.kick()
	o.mu.Unlock()
}

// start sends the queued messages, and from now on every message added,
// with send (the stream's; never called by two goroutines at once), from
// goroutines that spawn starts (nil: new ones).
func (o *outbox) start(send func(*pb.DriverMessage) error, spawn func(func())) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if spawn == nil {
		spawn = func(f func()) { go f() }
	}
	o.send, o.spawn = send, spawn
	o.kick()
	o.checkFlushed()
}

// kick starts a sender if messages wait and none runs. o.mu is held.
func (o *outbox) kick() {
	if o.send == nil || o.sending || o.failed || len(o.msgs) == 0 {
		return
	}
	o.sending = true
	o.spawn(o.drain)
}

// drain sends until the queue is empty, then ends.
func (o *outbox) drain() {
	for {
		o.mu.Lock()
		msgs := o.msgs
		o.msgs, o.tailBytes = nil, 0
		if len(msgs) == 0 {
			o.sending = false
			o.checkFlushed()
			o.mu.Unlock()
			return
		}
		send := o.send
		o.mu.Unlock()
		for _, m := range msgs {
			if err := send(m); err != nil {
				o.mu.Lock()
				o.failed, o.sending, o.msgs = true, false, nil
				o.checkFlushed()
				o.mu.Unlock()
				return
			}
		}
	}
}

func (o *outbox) take() []*pb.DriverMessage {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.msgs
	o.msgs, o.tailBytes = nil, 0
	return m
}

// close refuses later messages; those queued are still sent.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.closed = true
	o.flushed = make(chan struct{})
	o.checkFlushed()
}

// checkFlushed closes flushed once the outbox is closed and nothing is left
// to send: no sender runs, and none will (a queue never started counts as
// flushed). o.mu is held.
func (o *outbox) checkFlushed() {
	if !o.closed || o.sending || o.isFlushed || (o.send != nil && len(o.msgs) > 0 && !o.failed) {
		return
	}
	o.isFlushed = true
	close(o.flushed)
}
