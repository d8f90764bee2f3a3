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

// Consumer is one subscriber's queue.
type Consumer struct {
	name    string
	queue   chan Event
	dropped atomic.Int64
	log     *slog.Logger
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
	c := &Consumer{name: name, queue: make(chan Event, capacity), log: b.log}
	b.mu.Lock()
	defer b.mu.Unlock()
	var subs []*Consumer
	if p := b.subs.Load(); p != nil {
		subs = append(subs, *p...)
	}
	subs = append(subs, c)
	b.subs.Store(&subs)
	b.wg.Go(func() {
		for e := range c.queue {
			if e == stop {
				return
			}
			handle(e)
		}
	})
	return c
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
		h.Time = b.clock.Now()
	}
	for _, c := range *p {
		select {
		case c.queue <- e:
		default:
			c.drop()
		}
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
		// A marker, not close: a Publish that loaded the consumers just
		// before the swap may still send, which must not panic.
		for _, c := range *p {
			c.queue <- stop
		}
	}
	b.wg.Wait()
}

// stopEvent ends a consumer's goroutine once its queue is drained.
type stopEvent struct{ Header }

var stop Event = &stopEvent{}

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
