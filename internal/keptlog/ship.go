package keptlog

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"time"

	"k8s.io/utils/clock"
)

// shipState is the shipper goroutine's own: nothing else touches it.
type shipState struct {
	started bool
	// base is added to the offsets of this Writer's output when stored: the
	// end of what an earlier process of the same name left, so a name used
	// twice continues its log instead of overwriting it.
	base    int64
	lastEnd int64 // end of the last chunk taken, in this Writer's offsets
	// files are the process's files in the sink, oldest first, with end
	// the stored offset after the last shipped byte: the cap's accounting.
	files []keptFile
	end   int64
	// seg is the file chunks are appended to (sinks that append), begun at
	// stored offset segStart.
	seg        string
	segStart   int64
	enc        encoder
	failures   int       // in a row
	reported   int64     // drops already warned about
	reportedAt time.Time // when
}

type keptFile struct {
	name string
	off  int64
}

// run is the shipper: it cuts the buffer every interval and ships what is
// queued, backing off after a failure unless Flush or Close is waiting.
func (w *Writer) run() {
	defer close(w.exited)
	tick := w.clk.NewTicker(w.opts.Interval)
	defer tick.Stop()
	var retry clock.Timer // set while backing off
	var backoff time.Duration
	for {
		var retryC <-chan time.Time
		if retry != nil {
			retryC = retry.C()
		}
		select {
		case <-w.stop:
			if retry != nil {
				retry.Stop()
			}
			w.reportDrops(true)
			return
		case <-tick.C():
			w.mu.Lock()
			w.cutLocked()
			w.mu.Unlock()
		case <-w.kick:
		case <-retryC:
			retry = nil
		}
		w.reportDrops(false)
		w.mu.Lock()
		urgent := w.urgent
		w.urgent = false
		w.mu.Unlock()
		if retry != nil {
			if !urgent {
				continue
			}
			retry.Stop()
			retry = nil
		}
		if err := w.shipAll(); err != nil {
			backoff = min(max(2*backoff, firstBackoff), w.opts.MaxBackoff)
			retry = w.clk.NewTimer(backoff)
		} else {
			backoff = 0
		}
	}
}

// shipAll ships the queue in order, stopping at the first failure.
func (w *Writer) shipAll() error {
	for {
		w.mu.Lock()
		if w.inflight == nil && len(w.queue) > 0 {
			w.inflight = w.queue[0]
			w.queue[0] = nil
			w.queue = w.queue[1:]
			w.queued -= len(w.inflight.raw)
		}
		c := w.inflight
		w.mu.Unlock()
		if c == nil {
			return nil
		}
		if err := w.shipOne(c); err != nil {
			w.failed(err)
			return err
		}
		c.gz = nil // the encoder's buffer, for the next chunk
		if w.ship.failures > 0 {
			w.log.Info("kept log: shipping again", "dir", w.opts.Sink.Path(w.opts.Process.dir()), "failures", w.ship.failures)
			w.ship.failures = 0
		}
		// Before the chunk counts as shipped, so Close, which waits for
		// that, does not cut the deletion short.
		w.enforceCap()
		w.mu.Lock()
		w.inflight = nil
		if !c.end {
			w.stats.ChunksShipped++
			w.stats.BytesShipped += int64(len(c.raw))
		}
		w.recycleLocked(c)
		w.changedLocked()
		w.mu.Unlock()
	}
}

// shipOne stores one chunk: as its own file, or appended to the current
// one.
func (w *Writer) shipOne(c *chunk) error {
	ctx, cancel := context.WithTimeout(w.ctx, w.opts.ShipTimeout)
	defer cancel()
	s := &w.ship
	if !s.started {
		if err := w.start(ctx); err != nil {
			return err
		}
		s.started = true
	}
	if c.gz == nil {
		c.dropped = c.off - s.lastEnd
		s.lastEnd = c.off + int64(len(c.raw))
		gz, err := s.enc.encode(member{off: s.base + c.off, dropped: c.dropped, end: c.end, data: c.raw})
		if err != nil {
			return fmt.Errorf("compressing a chunk: %w", err)
		}
		c.gz = gz
	}
	off := s.base + c.off
	sink := w.opts.Sink
	// The end mark goes with the last file: a file of its own would hold
	// nothing to read.
	newFile := !sink.Appends() || s.seg == "" || s.end-s.segStart >= w.opts.SegmentBytes && !c.end
	name := s.seg
	if newFile {
		name = path.Join(w.opts.Process.dir(), fileName(off))
	}
	var err error
	if sink.Appends() {
		err = sink.Append(ctx, name, c.gz)
	} else {
		err = sink.Put(ctx, name, c.gz)
	}
	if err != nil {
		return err
	}
	if newFile {
		s.files = append(s.files, keptFile{name: name, off: off})
		s.seg, s.segStart = name, off
	}
	s.end = off + int64(len(c.raw))
	return nil
}

// start finds what an earlier process of the same name left, so this one
// continues after it, and enters the process in its application's index.
func (w *Writer) start(ctx context.Context) error {
	p, sink := w.opts.Process, w.opts.Sink
	listed, err := sink.List(ctx, p.dir())
	if err != nil {
		return err
	}
	var files []keptFile
	for _, f := range listed {
		if off, ok := parseFileName(path.Base(f.Name)); ok && path.Dir(f.Name) == p.dir() {
			files = append(files, keptFile{name: f.Name, off: off})
		}
	}
	slices.SortFunc(files, func(a, b keptFile) int { return cmp.Compare(a.off, b.off) })
	for len(files) > 0 {
		last := files[len(files)-1]
		end, complete, err := fileEnd(ctx, sink, last)
		if err != nil {
			return err
		}
		if complete {
			w.ship.base, w.ship.end = end, end
			w.log.Warn("kept log: a process of the same name left a log here; continuing after it",
				"dir", sink.Path(p.dir()), "bytes", end)
			break
		}
		// Not one whole chunk: nothing a reader could show.
		if err := sink.Delete(ctx, last.name); err != nil {
			return err
		}
		files = files[:len(files)-1]
	}
	w.ship.files = files
	return sink.Put(ctx, p.indexName(), nil)
}

// fileEnd is the stored offset after f's last whole chunk, and whether it
// has one.
func fileEnd(ctx context.Context, sink Sink, f keptFile) (end int64, complete bool, err error) {
	r, err := sink.Open(ctx, f.name, 0)
	if err != nil {
		return 0, false, err
	}
	defer r.Close()
	d := newDecoder(r, 0)
	end = f.off
	for {
		m, _, err := d.next(end)
		if err == nil {
			end, complete = m.off+int64(len(m.data)), true
			continue
		}
		if d.readErr != nil {
			return 0, false, fmt.Errorf("reading %s: %w", sink.Path(f.name), err)
		}
		// The file's end, an incomplete chunk or damage: what follows
		// cannot be read, by a reader either.
		return end, complete, nil
	}
}

// enforceCap deletes the oldest files while the log is longer than
// MaxBytes, keeping the newest.
func (w *Writer) enforceCap() {
	s := &w.ship
	n := 0
	for n < len(s.files)-1 && s.end-s.files[n].off > w.opts.MaxBytes {
		n++
	}
	if n == 0 {
		return
	}
	names := make([]string, n)
	for i, f := range s.files[:n] {
		names[i] = f.name
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.opts.ShipTimeout)
	defer cancel()
	if err := w.opts.Sink.Delete(ctx, names...); err != nil {
		// Tried again after the next chunk.
		w.log.Warn("kept log: could not delete the oldest files to stay under the cap", "err", err, "cap", w.opts.MaxBytes)
		return
	}
	cut := s.files[n].off - s.files[0].off
	s.files = slices.Delete(s.files, 0, n)
	w.mu.Lock()
	w.stats.BytesCut += cut
	w.mu.Unlock()
}

func (w *Writer) failed(err error) {
	w.ship.failures++
	w.mu.Lock()
	w.stats.ShipFailures++
	w.lastErr = err
	w.mu.Unlock()
	// The first failure, then fewer and fewer: 1, 2, 4, 8… in a row.
	if n := w.ship.failures; n&(n-1) == 0 {
		w.log.Warn("kept log: shipping failed; output is held in memory and shipping retried", "err", err, "failures", n)
	}
}

// reportDrops warns of chunks dropped since the last warning, at most once
// an interval unless final, from the shipper: never from Write, whose
// caller may be the very logger that would print the warning.
func (w *Writer) reportDrops(final bool) {
	w.mu.Lock()
	st := w.stats
	w.mu.Unlock()
	now := w.clk.Now()
	if st.ChunksDropped > w.ship.reported && (final || w.ship.reported == 0 || now.Sub(w.ship.reportedAt) >= w.opts.Interval) {
		w.ship.reported, w.ship.reportedAt = st.ChunksDropped, now
		w.log.Warn("kept log: dropped the oldest unsent output: the store is down or slow and the memory for unsent output is full",
			"chunksDropped", st.ChunksDropped, "bytesDropped", st.BytesDropped, "maxMemory", w.opts.MaxMemory)
	}
}
