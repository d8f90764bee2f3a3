package keptlog

import (
	"context"
	"io"
	"os"
	"sync"
	"time"
)

// Keeper keeps one process's output from its first byte: it captures the
// process's standard output and error (or, on a terminal or off Linux,
// tees the writer the process logs to), holds what comes before the
// process knows where its log goes, starts the Writer when it does, and
// flushes it at the end. A zero Keeper's methods do nothing, so a process
// that keeps no log calls them all the same.
type Keeper struct {
	pending *Pending
	stop    func(context.Context) // ends the capture; nil when teeing

	mu sync.Mutex
	w  *Writer
}

// NewKeeper starts keeping the output of this process, which logs to
// stderr. It returns the writer to log to from now on: when the
// descriptors are captured (everything written to them is kept), one that
// writes to the former standard error and the kept log at once, so the
// log never waits in a pipe; else stderr teed into the kept log.
func NewKeeper(stderr io.Writer) (*Keeper, io.Writer) {
	k := &Keeper{pending: NewPending(0)}
	if f, ok := stderr.(*os.File); ok && f == os.Stderr && !isTerminal(f) {
		if direct, stop, err := CaptureStdio(k.pending); err == nil {
			k.stop = stop
			return k, direct
		}
	}
	return k, io.MultiWriter(stderr, k.pending)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Start keeps what was held and all that follows with New(o). The bytes
// the hold dropped (it keeps DefaultPendingBytes) show as a gap in the
// log.
func (k *Keeper) Start(o Options) error {
	if k == nil {
		return nil
	}
	w, err := New(o)
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.w = w
	k.mu.Unlock()
	k.pending.Attach(w)
	return nil
}

// Discard keeps nothing: the process learnt that its logs are not kept.
func (k *Keeper) Discard() {
	if k != nil {
		k.pending.Discard()
	}
}

// Close ends the capture, so that every byte written so far reaches the
// Writer, then ships what is left and the end mark, within ctx.
func (k *Keeper) Close(ctx context.Context) error {
	if k == nil {
		return nil
	}
	if k.stop != nil {
		// A child that inherited a descriptor may keep the pipe open:
		// wait a little for the last bytes, not for the child.
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		k.stop(sctx)
		cancel()
	}
	k.mu.Lock()
	w := k.w
	k.mu.Unlock()
	if w == nil {
		k.pending.Discard()
		return nil
	}
	return w.Close(ctx)
}
