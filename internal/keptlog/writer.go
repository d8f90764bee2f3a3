package keptlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Defaults of Options' zero fields.
const (
	// DefaultInterval is how often buffered output is shipped: a process
	// killed with SIGKILL loses at most this much of its log.
	DefaultInterval = 5 * time.Second
	// DefaultMaxMemory bounds the output held unsent while the store is
	// down or slow.
	DefaultMaxMemory = 8 << 20
	// DefaultMaxBytes is the per-process size cap: 1 GiB of log (before
	// compression), far more than a process logging at info level writes.
	DefaultMaxBytes = 1 << 30
	// DefaultMaxChunk is the most a chunk holds: one is cut early when
	// output comes faster, so memory is freed in pieces a drop can take.
	DefaultMaxChunk = 1 << 20
	// DefaultMaxBackoff bounds the wait between attempts to ship.
	DefaultMaxBackoff = 30 * time.Second
	// DefaultShipTimeout bounds one operation on the store, so a store
	// that hangs counts as failing.
	DefaultShipTimeout = time.Minute

	firstBackoff = time.Second
)

// Options configure a Writer.
type Options struct {
	Sink    Sink
	Process Process
	// Interval between shipments; DefaultInterval when zero.
	Interval time.Duration
	// MaxMemory bounds the bytes of output (uncompressed) held unsent;
	// past it the oldest unsent chunk is dropped. One chunk being shipped
	// is never dropped. Buffers of at most 3 chunks and one compressed
	// chunk come on top.
	MaxMemory int
	// MaxChunk is the most output one chunk holds: at most
	// DefaultMaxChunk and a quarter of MaxMemory by default.
	MaxChunk int
	// MaxBytes is the cap: past it, the oldest files are deleted so the
	// last MaxBytes bytes (at least the newest file) are kept.
	MaxBytes int64
	// SegmentBytes is how much output a sink that appends puts in one file
	// before starting the next: what the cap deletes at a time. MaxBytes/8
	// by default, so at least 7/8 of the cap is kept.
	SegmentBytes int64
	MaxBackoff   time.Duration
	ShipTimeout  time.Duration
	// Clock drives shipments and retries; the real clock when nil.
	Clock clock.WithTicker
	// Logger gets the warnings of failures and drops. It must not write
	// into this Writer: each warning about a store that is down would add
	// to what waits for it.
	Logger *slog.Logger
}

// Stats count what happened to a process's output.
type Stats struct {
	ChunksShipped int64
	BytesShipped  int64 // of output, before compression
	ChunksDropped int64 // to stay within MaxMemory
	// BytesDropped are the dropped chunks' bytes, and those written after
	// Close.
	BytesDropped int64
	ShipFailures int64 // failed attempts to ship a chunk
	BytesCut     int64 // deleted to stay under MaxBytes
}

// chunk is a piece of output cut from the buffer, in order.
type chunk struct {
	off int64 // of raw's first byte in the process's output
	raw []byte
	end bool // Close's mark: nothing follows

	// Set by the shipper when it takes the chunk.
	dropped int64
	gz      []byte
}

// Writer keeps a process's output: Write buffers it, a goroutine ships it
// to the sink every Interval, on Flush and on Close. Safe for concurrent
// use. Write never blocks on the store and never fails.
type Writer struct {
	opts Options
	clk  clock.WithTicker
	log  *slog.Logger

	mu       sync.Mutex
	buf      []byte // output not yet cut into a chunk
	bufOff   int64  // offset of buf[0]
	queue    []*chunk
	queued   int    // bytes of output in queue
	inflight *chunk // taken by the shipper, not yet shipped
	closed   bool
	urgent   bool          // Flush or Close waits: ship now, even while backing off
	changed  chan struct{} // closed and replaced when a chunk leaves
	stats    Stats
	lastErr  error
	// free holds chunk buffers shipped or dropped, for Write to reuse:
	// fast output then makes no garbage.
	free [][]byte

	kick   chan struct{}
	stop   chan struct{}
	exited chan struct{}
	ctx    context.Context // ends when the shipper stops
	cancel context.CancelFunc

	ship shipState // the shipper goroutine's own
}

// New starts a Writer of opts.Process's log into opts.Sink.
func New(opts Options) (*Writer, error) {
	if opts.Sink == nil {
		return nil, errors.New("kept log: no sink")
	}
	if err := opts.Process.Check(); err != nil {
		return nil, fmt.Errorf("kept log: %w", err)
	}
	o, err := withDefaults(opts)
	if err != nil {
		return nil, fmt.Errorf("kept log of %s: %w", opts.Process, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{opts: o, clk: o.Clock, log: o.Logger, changed: make(chan struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{}), ctx: ctx, cancel: cancel}
	go w.run()
	return w, nil
}

func withDefaults(o Options) (Options, error) {
	if o.Interval < 0 || o.MaxMemory < 0 || o.MaxChunk < 0 || o.MaxBytes < 0 || o.SegmentBytes < 0 || o.MaxBackoff < 0 || o.ShipTimeout < 0 {
		return o, errors.New("negative setting")
	}
	o.Interval = cmpOr(o.Interval, DefaultInterval)
	o.MaxMemory = cmpOr(o.MaxMemory, DefaultMaxMemory)
	o.MaxChunk = cmpOr(o.MaxChunk, max(1, min(DefaultMaxChunk, o.MaxMemory/4)))
	if o.MaxChunk > o.MaxMemory/2 {
		return o, fmt.Errorf("a chunk of %d bytes with %d bytes of memory: a chunk may take at most half of it", o.MaxChunk, o.MaxMemory)
	}
	o.MaxBytes = cmpOr(o.MaxBytes, DefaultMaxBytes)
	o.SegmentBytes = cmpOr(o.SegmentBytes, max(1, o.MaxBytes/8))
	o.MaxBackoff = cmpOr(o.MaxBackoff, DefaultMaxBackoff)
	o.ShipTimeout = cmpOr(o.ShipTimeout, DefaultShipTimeout)
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Logger = o.Logger.With("keptlog", o.Process.dirName())
	return o, nil
}

func cmpOr[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Write buffers p and returns at once: len(p), nil, always. After Close,
// p is counted as dropped.
func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	cut := false
	w.mu.Lock()
	if w.closed {
		w.stats.BytesDropped += int64(n)
		w.mu.Unlock()
		return n, nil
	}
	for len(p) > 0 {
		if w.buf == nil {
			if n := len(w.free); n > 0 {
				w.buf, w.free = w.free[n-1], w.free[:n-1]
			} else {
				w.buf = make([]byte, 0, w.opts.MaxChunk)
			}
		}
		k := min(len(p), w.opts.MaxChunk-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == w.opts.MaxChunk {
			w.cutLocked()
			cut = true
		}
	}
	w.mu.Unlock()
	if cut {
		w.signal()
	}
	return n, nil
}

// cutLocked queues the buffered output as a chunk, dropping the oldest
// unsent chunks past MaxMemory.
func (w *Writer) cutLocked() {
	if len(w.buf) == 0 {
		return
	}
	c := &chunk{off: w.bufOff, raw: w.buf}
	if len(w.buf) < w.opts.MaxChunk/2 {
		// A small chunk (one interval's worth) gets a slice of its size,
		// so held memory is what MaxMemory counts.
		c.raw = append([]byte(nil), w.buf...)
		w.buf = w.buf[:0]
	} else {
		w.buf = nil
	}
	w.bufOff += int64(len(c.raw))
	w.queue = append(w.queue, c)
	w.queued += len(c.raw)
	held := w.queued
	if w.inflight != nil {
		held += len(w.inflight.raw)
	}
	for held > w.opts.MaxMemory && len(w.queue) > 0 {
		old := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.queued -= len(old.raw)
		held -= len(old.raw)
		w.stats.ChunksDropped++
		w.stats.BytesDropped += int64(len(old.raw))
		w.recycleLocked(old)
		w.changedLocked()
	}
}

// recycleLocked keeps a full-size chunk buffer nobody uses any more.
func (w *Writer) recycleLocked(c *chunk) {
	if cap(c.raw) == w.opts.MaxChunk && len(w.free) < 2 {
		w.free = append(w.free, c.raw[:0])
	}
	c.raw = nil
}

func (w *Writer) changedLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// signal wakes the shipper without waiting for it.
func (w *Writer) signal() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Flush ships everything written so far, even while the shipper backs off
// after a failure, and waits until it is shipped (or dropped) or ctx ends.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	w.cutLocked()
	target := w.bufOff
	w.urgent = true
	w.mu.Unlock()
	w.signal()
	return w.wait(ctx, "flushing", func() bool { return w.pendingFromLocked() >= target })
}

// pendingFromLocked is the offset of the oldest output not yet shipped or
// dropped.
func (w *Writer) pendingFromLocked() int64 {
	switch {
	case w.inflight != nil:
		return w.inflight.off
	case len(w.queue) > 0:
		return w.queue[0].off
	}
	return w.bufOff
}

// Close ships what is left and a mark that the log is complete (a reader
// following it stops there), then stops the shipper: when ctx ends first,
// what is unsent is dropped and the error says how much. Later writes are
// dropped. Close may be called more than once.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.exited
		return nil
	}
	w.closed = true
	w.cutLocked()
	w.queue = append(w.queue, &chunk{off: w.bufOff, end: true})
	w.urgent = true
	w.mu.Unlock()
	w.signal()
	err := w.wait(ctx, "closing", func() bool { return w.inflight == nil && len(w.queue) == 0 })
	close(w.stop)
	w.cancel()
	<-w.exited
	if err != nil {
		w.mu.Lock()
		unsent := w.queue
		if w.inflight != nil {
			unsent = append([]*chunk{w.inflight}, unsent...)
		}
		for _, c := range unsent {
			if !c.end {
				w.stats.ChunksDropped++
				w.stats.BytesDropped += int64(len(c.raw))
			}
		}
		w.queue, w.queued, w.inflight = nil, 0, nil
		w.mu.Unlock()
	}
	return err
}

// wait waits until done holds (checked under mu) or ctx ends.
func (w *Writer) wait(ctx context.Context, what string, done func() bool) error {
	for {
		w.mu.Lock()
		if done() {
			w.mu.Unlock()
			return nil
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-w.exited:
			return fmt.Errorf("%s the kept log of %s: the writer is closed", what, w.opts.Process)
		case <-ctx.Done():
			w.mu.Lock()
			held, lastErr := w.queued+len(w.buf), w.lastErr
			if w.inflight != nil {
				held += len(w.inflight.raw)
			}
			w.mu.Unlock()
			err := fmt.Errorf("%s the kept log of %s to %s: %d bytes unsent: %w", what, w.opts.Process,
				w.opts.Sink.Path(w.opts.Process.dir()), held, ctx.Err())
			if lastErr != nil {
				err = fmt.Errorf("%w (last failure: %w)", err, lastErr)
			}
			return err
		}
	}
}

// Stats returns the counts so far.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// WriteAll keeps data as the whole log of process p in sink, as a process
// that wrote data and exited leaves it: for tools, and for tests of what
// reads kept logs.
func WriteAll(ctx context.Context, sink Sink, p Process, data []byte) error {
	w, err := New(Options{Sink: sink, Process: p})
	if err != nil {
		return err
	}
	_, _ = w.Write(data) // never fails
	return w.Close(ctx)
}
