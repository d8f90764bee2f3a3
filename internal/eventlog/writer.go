package eventlog

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path"
	"sync"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/events"
)

// Writer writes the events it is handed to an event log. Handle may be
// called from one goroutine (a bus consumer's) while the writer flushes
// from its own.
type Writer struct {
	opts Options
	st   storage
	ctx  context.Context
	log  *slog.Logger
	// dir is the rolled log's directory, "" for a single file; final is
	// the single file's name once complete.
	dir, final string

	mu   sync.Mutex
	name string // the file being written
	// sink takes the bytes to the storage (see spool); comp compresses
	// them into it, nil without a codec.
	sink  *spool
	comp  compressor
	out   *bufio.Writer
	size  int64  // bytes of events in the file, before compression
	index int    // of the rolled log's current file
	dirty bool   // events were buffered since the last flush
	line  []byte // the event being written
	err   error  // the first failure: nothing is written after it
	done  bool
	// starts are the task starts held back, in TaskID order, so that a
	// task that ends before the next flush takes one line, not two.
	starts pendingStarts
	// rows are the successful task attempts whose start and end fell
	// since the last flush, waiting for their TaskRows line.
	rows events.TaskRows

	stop    chan struct{}
	stopped chan struct{}
}

// zstdWindow is the zstd encoder's window, its largest block.
const zstdWindow = 128 << 10

// compressor is a codec's writer.
type compressor interface {
	io.WriteCloser
	Flush() error
}

// Start creates the application's event log and returns its writer. The
// log must not exist yet, unless opts.Overwrite.
func Start(ctx context.Context, opts Options) (*Writer, error) {
	if err := checkCodec(opts.Codec); err != nil {
		return nil, err
	}
	if opts.AppID == "" {
		return nil, fmt.Errorf("event log: no application id")
	}
	if opts.AttemptID != "" {
		if err := CheckAppID(opts.AttemptID); err != nil {
			return nil, fmt.Errorf("event log: attempt id: %w", err)
		}
	}
	if opts.Rolling && opts.MaxFileSize <= 0 {
		return nil, fmt.Errorf("event log: rolling needs a maximum file size, got %d", opts.MaxFileSize)
	}
	st, err := openStorage(opts.Dir, opts.Store)
	if err != nil {
		return nil, fmt.Errorf("event log: %w", err)
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The log outlives a cancelled application: its end is written too.
	w := &Writer{opts: opts, st: st, ctx: context.WithoutCancel(ctx), log: log,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if opts.Rolling {
		err = w.startRolling()
	} else {
		err = w.startSingle()
	}
	if err != nil {
		return nil, fmt.Errorf("event log: %w", err)
	}
	go w.flushLoop()
	return w, nil
}

// logName is what the log's names are made of: the application id, and
// its attempt's.
func (w *Writer) logName() string { return logName(w.opts.AppID, w.opts.AttemptID) }

// Path is where the log is written: its file, or its directory when
// rolled.
func (w *Writer) Path() string {
	if w.dir != "" {
		return w.st.path(w.dir)
	}
	return w.st.path(w.final)
}

// fail stops the writing after its first error, which it logs: the
// application goes on without its log.
func (w *Writer) fail(err error) {
	w.err = err
	w.log.Error("the event log stopped: the application goes on without it", "path", w.Path(), "err", err)
	// An object being uploaded is abandoned, not completed half written.
	if w.sink != nil {
		w.sink.abort()
	}
}

func (w *Writer) flushLoop() {
	defer close(w.stopped)
	t := w.opts.Clock.NewTicker(w.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C():
			// Hand the spool what was written, without waiting for the
			// storage: the spool writes it soon anyway, and an idle log
			// then costs no wake-up of the spool each interval.
			w.handOff()
		}
	}
}

// Flush writes out the buffered events, so readers of the log in progress
// see them, and returns once the storage has them. It waits for the
// storage without the writer's lock: events handed to the log meanwhile
// do not wait.
func (w *Writer) Flush() {
	if w.handOff() {
		w.sink.wait()
	}
}

// handOff hands the spool the buffered events, under the writer's lock,
// and reports whether the log is still written.
func (w *Writer) handOff() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.done {
		return false
	}
	w.writeHeld()
	if w.err != nil {
		return false
	}
	// The storage's failures show here even while no event comes.
	if err := w.sink.failure(); err != nil {
		w.fail(err)
		return false
	}
	if !w.dirty {
		return true
	}
	w.dirty = false
	err := w.out.Flush()
	if err == nil && w.comp != nil {
		err = w.comp.Flush()
	}
	if err != nil {
		w.fail(err) // the spool's, which names the file
		return false
	}
	return true
}

// Close writes out the last events and marks the log complete: a single
// file loses its .inprogress suffix, a rolled log's status marker its own.
// It returns the writer's first error, which it has logged already.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return w.err
	}
	w.done = true
	w.mu.Unlock()
	close(w.stop)
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.writeHeld()
	}
	if w.err != nil {
		return w.err
	}
	err := w.closeFile()
	if err == nil {
		err = w.complete()
	}
	if err != nil {
		w.fail(err)
	}
	return err
}

// complete gives the finished log its final names.
func (w *Writer) complete() error {
	if w.dir == "" {
		if w.st.whole() {
			return nil
		}
		return w.st.rename(w.ctx, w.name, w.final)
	}
	running, finished := path.Join(w.dir, statusName(w.logName(), true)), path.Join(w.dir, statusName(w.logName(), false))
	if w.st.whole() {
		if err := w.st.put(w.ctx, finished, nil); err != nil {
			return err
		}
		return w.st.remove(w.ctx, running)
	}
	return w.st.rename(w.ctx, running, finished)
}
