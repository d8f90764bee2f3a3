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
type Bus struct {
	clock clock.PassiveClock
	log   *slog.Logger
	subs  atomic.Pointer[[]*Consumer]
	mu    sync.Mutex // serializes Subscribe and Close
	wg    sync.WaitGroup
}

// Consumer is one subscriber's queue. It is a slice that grows with what
// it holds, not a channel, whose buffer of capacity events would be
// allocated up front for every consumer: most of the time a consumer
// holds a handful of events, and the event log's deep queue would cost
// 1.6 MB of the driver's memory for nothing.
type Consumer struct {
	name    string
	max     int
	dropped atomic.Int64
	log     *slog.Logger
	// wake tells the consumer's goroutine that queue is no longer empty.
	wake chan struct{}

	// waiting counts the events queued or taken in a batch but not yet
	// being handled, which max bounds, as a channel's capacity would.
	waiting atomic.Int64

	mu      sync.Mutex
	queue   []Event // the events not yet taken
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
// 0). Events that find the queue full are dropped and counted.
func (b *Bus) Subscribe(name string, capacity int, handle func(Event)) *Consumer {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	c := &Consumer{name: name, max: capacity, log: b.log, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	var subs []*Consumer
	if p := b.subs.Load(); p != nil {
		subs = append(subs, *p...)
	}
	subs = append(subs, c)
	b.subs.Store(&subs)
	b.wg.Go(func() { c.run(handle) })
	return c
}

// run hands the queued events to handle, a batch at a time, until the
// bus is closed and the queue drained.
func (c *Consumer) run(handle func(Event)) {
	var batch []Event
	for range c.wake {
		for {
			c.mu.Lock()
			batch, c.queue = c.queue, batch[:0]
			stopped := c.stopped
			c.mu.Unlock()
			if len(batch) == 0 {
				if stopped {
					return
				}
				break
			}
			for _, e := range batch {
				c.waiting.Add(-1)
				handle(e)
			}
			clear(batch)
			// A backlog's large slice is let go once the consumer caught
			// up, rather than kept for good.
			if cap(batch) > 4096 {
				batch = nil
			}
		}
	}
}

// push queues e, or drops it when the queue is full.
func (c *Consumer) push(e Event) {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	if c.waiting.Load() >= int64(c.max) {
		c.mu.Unlock()
		c.drop()
		return
	}
	c.queue = append(c.queue, e)
	c.waiting.Add(1)
	first := len(c.queue) == 1
	c.mu.Unlock()
	if first {
		c.signal()
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
	if b == nil {
		return false
	}
	p := b.subs.Load()
	return p != nil && len(*p) > 0
}

// Publish hands e to every consumer without waiting for any.
func (b *Bus) Publish(e Event) {
	if b == nil {
		return
	}
	p := b.subs.Load()
	if p == nil {
		return
	}
	if h := e.header(); h.Time.IsZero() {
		// Microseconds, not the clock's nanoseconds: finer is noise, and
		// the event log compresses the digits dropped worst.
		h.Time = b.clock.Now().Truncate(time.Microsecond)
	}
	for _, c := range *p {
		c.push(e)
	}
}

// Close stops taking events, lets every consumer handle what its queue
// holds, and returns once all have.
func (b *Bus) Close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	p := b.subs.Swap(nil)
	b.mu.Unlock()
	if p != nil {
		// A Publish that loaded the consumers just before the swap may
		// still push: its event is dropped.
		for _, c := range *p {
			c.mu.Lock()
			c.stopped = true
			c.mu.Unlock()
			c.signal()
		}
	}
	b.wg.Wait()
}

// Consumers are the consumers subscribed, in subscription order; none once
// the bus is closed.
func (b *Bus) Consumers() []*Consumer {
	if b == nil {
		return nil
	}
	if p := b.subs.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// Name is the consumer's name.
func (c *Consumer) Name() string { return c.name }

// Dropped is how many events the consumer lost because its queue was full.
func (c *Consumer) Dropped() int64 { return c.dropped.Load() }

// drop counts a lost event and warns on the first and every 1,000th loss,
// as Spark does, so a slow consumer is seen without flooding the log.
func (c *Consumer) drop() {
	if n := c.dropped.Add(1); n == 1 || n%1000 == 0 {
		c.log.Warn("an event consumer falls behind: dropping events", "consumer", c.name, "dropped", n)
	}
}
