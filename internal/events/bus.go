package events

import (
	"time"

	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/utils/clock"
)

// DefaultCapacity is each consumer's queue length, as Spark's
// spark.scheduler.listenerbus.eventqueue.capacity.
const DefaultCapacity = 10000

// Bus delivers published events to its consumers, each in its own
// goroutine and in publishing order. A nil *Bus drops every event, so
// publishers need no check.
//
// The consumers share one queue: a publisher appends an event once, under
// one lock, whatever the number of consumers, and each consumer keeps its
// place in it. A consumer whose share of the queue reaches its capacity
// loses its oldest event; the queue holds what the slowest consumer has
// not taken, so it is bounded by the largest capacity.
type Bus struct {
	clock clock.PassiveClock
	log   *slog.Logger
	wg    sync.WaitGroup
	// enabled is whether any consumer listens, read without the lock.
	enabled atomic.Bool

	mu     sync.Mutex
	subs   []*Consumer
	closed bool
	// queue holds the events some consumer has not taken yet: queue[i] is
	// the event numbered base+i, events being numbered from 0 in
	// publishing order.
	queue []Event
	base  int64
}

// maxGather bounds the batch a lingering consumer gathers before it wakes
// without waiting out its linger: a quarter of its queue, at most this
// many events (a few hundred kilobytes of them, still in cache).
const maxGather = 4096

// Consumer is one subscriber's place in the bus's queue.
type Consumer struct {
	bus    *Bus
	name   string
	max    int64
	linger time.Duration
	// gather is the batch a lingering consumer wakes for before its
	// linger is out.
	gather  int64
	dropped atomic.Int64
	// wake tells the consumer's goroutine that the queue holds an event
	// for it after it had taken them all, or, lingering, that its batch
	// is gathered.
	wake chan struct{}

	// next is the number of the first event the consumer has not taken;
	// stopped is set by Close. Both are guarded by bus.mu.
	next    int64
	stopped bool
}

// NewBus returns a bus that stamps events with clk's time. A nil logger
// discards.
func NewBus(clk clock.PassiveClock, log *slog.Logger) *Bus {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bus{clock: clk, log: log}
}

// Now is the bus's clock time, for publishers that time things themselves.
func (b *Bus) Now() time.Time {
	if b == nil {
		return clock.RealClock{}.Now()
	}
	return b.clock.Now()
}

// Subscribe starts delivering events published from now on to handle, in
// one goroutine, through a queue of capacity events (DefaultCapacity when
// 0). When the queue is full, its oldest event is dropped and counted.
func (b *Bus) Subscribe(name string, capacity int, handle func(Event)) *Consumer {
	return b.SubscribeBatches(name, capacity, 0, func(batch []Event) {
		for _, e := range batch {
			handle(e)
		}
	})
}

// SubscribeBatches is Subscribe for a consumer that takes the events a
// batch at a time, as many as were queued for it, in order: one lock or
// one recover per batch, not per event, on the task path. handle must
// not keep batch.
//
// A consumer that can be late by linger (a page, a log flushed every
// second) gathers events for up to that long after the first it has not
// taken, or until a quarter of its capacity (at most maxGather) are
// queued, whichever comes first: at the scheduler's pace it then wakes
// tens of times a second rather than once or twice per task, each wake
// costing the process tens of microseconds, and it never comes near
// losing events to a burst.
func (b *Bus) SubscribeBatches(name string, capacity int, linger time.Duration, handle func([]Event)) *Consumer {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	c := &Consumer{bus: b, name: name, max: int64(capacity), linger: linger, gather: max(1, min(int64(capacity)/4, maxGather)),
		wake: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	c.next = b.base + int64(len(b.queue))
	c.stopped = b.closed
	if !b.closed {
		b.subs = append(b.subs, c)
		b.enabled.Store(true)
	}
	b.wg.Go(func() { c.run(handle) })
	c.signal() // a consumer subscribed after Close returns at once
	return c
}

// run hands the events to handle, a batch at a time, until the bus is
// closed and the consumer has taken every event.
func (c *Consumer) run(handle func([]Event)) {
	var batch []Event
	var t *time.Timer
	for {
		queued, stopped := c.queued()
		if queued == 0 {
			if stopped {
				return
			}
			<-c.wake // the first event, or Close
			continue
		}
		if c.linger > 0 && !stopped && queued < c.gather {
			if t == nil {
				t = time.NewTimer(c.linger)
			} else {
				t.Reset(c.linger)
			}
			c.wait(t)
		}
		batch = c.take(batch[:0])
		handle(batch)
		clear(batch)
		// A backlog's large slice is let go once the consumer caught
		// up, rather than kept for good.
		if cap(batch) > 2*maxGather {
			batch = nil
		}
	}
}

// wait returns when the consumer's batch is gathered, the bus closes or
// t fires.
func (c *Consumer) wait(t *time.Timer) {
	// A signal left from before this wait says nothing of now.
	select {
	case <-c.wake:
	default:
	}
	if queued, stopped := c.queued(); queued >= c.gather || stopped {
		return
	}
	select {
	case <-c.wake:
		t.Stop()
	case <-t.C:
	}
}

// queued is how many events the consumer has not taken, and whether the
// bus is closed.
func (c *Consumer) queued() (int64, bool) {
	b := c.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.base + int64(len(b.queue)) - c.next, c.stopped
}

// take appends the events the consumer has not taken to batch.
func (c *Consumer) take(batch []Event) []Event {
	b := c.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	batch = append(batch, b.queue[c.next-b.base:]...)
	c.next = b.base + int64(len(b.queue))
	b.trimLocked()
	return batch
}

// trimLocked lets go of the events every consumer has taken, once they are
// half the queue or more: the rest moves to the front, at most as many
// events as were let go, and the slice is kept for what comes next, unless
// it is far larger than what it holds after a backlog.
func (b *Bus) trimLocked() {
	first := b.base + int64(len(b.queue))
	for _, c := range b.subs {
		first = min(first, c.next)
	}
	n := int(first - b.base)
	if n == 0 || 2*n < len(b.queue) {
		return
	}
	m := copy(b.queue, b.queue[n:])
	clear(b.queue[m:])
	b.queue = b.queue[:m]
	b.base = first
	if cap(b.queue) > 4096 && 8*m < cap(b.queue) {
		b.queue = slices.Clone(b.queue)
	}
}

func (c *Consumer) signal() {
	select {
	case c.wake <- struct{}{}:
	default: // already signalled
	}
}

// Enabled reports whether any consumer listens, so a publisher on a hot
// path can skip building an event nobody reads.
func (b *Bus) Enabled() bool {
	return b != nil && b.enabled.Load()
}

// Publish hands e to every consumer without waiting for any.
func (b *Bus) Publish(e Event) {
	b.PublishAll([]Event{e})
}

// PublishAll hands evs, in order, to every consumer without waiting for
// any: one append under the bus's lock for the lot, which is what a
// publisher of many events (the task scheduler) wants. Events without a
// time get the same one.
func (b *Bus) PublishAll(evs []Event) {
	if !b.Enabled() || len(evs) == 0 {
		return
	}
	var now time.Time
	for _, e := range evs {
		if h := e.header(); h.Time.IsZero() {
			if now.IsZero() {
				// Microseconds, not the clock's nanoseconds: finer is
				// noise, and the event log compresses the digits
				// dropped worst. In UTC, which consumers check for
				// without a zone lookup (pages show local time).
				now = b.clock.Now().Truncate(time.Microsecond).UTC()
			}
			h.Time = now
		}
	}
	var warn []*Consumer
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	first := b.base + int64(len(b.queue))
	b.queue = append(b.queue, evs...)
	end := first + int64(len(evs))
	for _, c := range b.subs {
		// Woken when it had taken everything (it waits for a first
		// event), or when its batch is gathered (it waits for that).
		if c.next == first || c.linger > 0 && first-c.next < c.gather && end-c.next >= c.gather {
			c.signal()
		}
		if over := end - c.next - c.max; over > 0 {
			c.next += over
			// As Spark, on the first loss and every 1,000th: a slow
			// consumer is seen without flooding the log.
			if d := c.dropped.Add(over); d == over || d/1000 != (d-over)/1000 {
				warn = append(warn, c)
			}
		}
	}
	if len(warn) > 0 || end/1024 != first/1024 {
		// Consumers that fall behind take nothing: the drops move them.
		b.trimLocked()
	}
	b.mu.Unlock()
	for _, c := range warn {
		b.log.Warn("an event consumer falls behind: dropping its oldest events", "consumer", c.name, "dropped", c.dropped.Load())
	}
}

// Close stops taking events, lets every consumer handle what it has not
// taken yet, and returns once all have.
func (b *Bus) Close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.closed = true
	b.enabled.Store(false)
	// The consumers stay in subs: what they have not taken stays queued.
	for _, c := range b.subs {
		c.stopped = true
		c.signal()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// Consumers are the consumers subscribed, in subscription order; none once
// the bus is closed.
func (b *Bus) Consumers() []*Consumer {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	return slices.Clone(b.subs)
}

// Name is the consumer's name.
func (c *Consumer) Name() string { return c.name }

// Dropped is how many events the consumer lost because its queue was full.
func (c *Consumer) Dropped() int64 { return c.dropped.Load() }
