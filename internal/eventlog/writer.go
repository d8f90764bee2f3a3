package eventlog

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/seqmap"
)

// DefaultFlushInterval is how often a Writer writes out the events it
// buffered, so a running application's log is never far behind.
const DefaultFlushInterval = time.Second

// Options configure a Writer.
type Options struct {
	// Dir is spark.eventLog.dir: a local path, a file: URI or an s3://
	// prefix.
	Dir   string
	AppID string
	// Codec compresses the files: one of Codecs, or "" for none.
	Codec string
	// Rolling writes a directory of files of at most MaxFileSize bytes of
	// events each (before compression).
	Rolling     bool
	MaxFileSize int64
	// Overwrite replaces a log of the same application id.
	Overwrite bool
	// FlushInterval is DefaultFlushInterval when 0.
	FlushInterval time.Duration
	// Store is the object-store client of an s3:// Dir.
	Store  *objstore.Store
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// FromConf is the event log's configuration, and whether it is enabled.
func FromConf(c *config.Conf, appID string) (Options, bool) {
	o := Options{
		Dir:         config.EventLogDir.Get(c),
		AppID:       appID,
		Rolling:     config.EventLogRolling.Get(c),
		MaxFileSize: config.EventLogRollingMaxFileSize.Get(c),
		Overwrite:   config.EventLogOverwrite.Get(c),
	}
	if config.EventLogCompress.Get(c) {
		o.Codec = config.EventLogCompressionCodec.Get(c)
	}
	return o, config.EventLogEnabled.Get(c)
}

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

// Path is where the log is written: its file, or its directory when
// rolled.
func (w *Writer) Path() string {
	if w.dir != "" {
		return w.st.path(w.dir)
	}
	return w.st.path(w.final)
}

func (w *Writer) startSingle() error {
	if err := w.st.mkdir(w.ctx, ""); err != nil {
		return err
	}
	w.final = singleName(w.opts.AppID, w.opts.Codec)
	name := w.final
	if !w.st.whole() {
		name += inProgress
	}
	for _, n := range []string{w.final, w.final + inProgress} {
		if err := w.clear(n); err != nil {
			return err
		}
	}
	return w.open(name)
}

func (w *Writer) startRolling() error {
	w.dir = rollingDirName(w.opts.AppID)
	if err := w.clear(w.dir); err != nil {
		return err
	}
	if err := w.st.mkdir(w.ctx, w.dir); err != nil {
		return err
	}
	if err := w.st.put(w.ctx, path.Join(w.dir, statusName(w.opts.AppID, true)), nil); err != nil {
		return err
	}
	w.index = 1
	return w.open(path.Join(w.dir, eventsName(w.opts.AppID, w.index, w.opts.Codec)))
}

// clear removes an earlier log named name if Overwrite allows it, and
// fails if it does not.
func (w *Writer) clear(name string) error {
	ok, err := w.st.exists(w.ctx, name)
	if err != nil || !ok {
		return err
	}
	if !w.opts.Overwrite {
		return fmt.Errorf("%s already exists; set spark.eventLog.overwrite=true to replace it", w.st.path(name))
	}
	w.log.Warn("replacing an existing event log", "path", w.st.path(name))
	return w.st.remove(w.ctx, name)
}

// open starts writing the log's first file, name: it is created here, so
// that a log that cannot be written fails its application's start; the
// files of a rolled log after it are created by the spool.
func (w *Writer) open(name string) error {
	f, err := w.st.create(w.ctx, name)
	if err != nil {
		return err
	}
	w.sink = newSpool(f, name, func(name string) (io.WriteCloser, error) { return w.st.create(w.ctx, name) }, w.st.path)
	if err := w.startFile(name); err != nil {
		w.sink.abort()
		return err
	}
	return nil
}

// startFile starts the events of the file name, which the spool writes.
func (w *Writer) startFile(name string) error {
	var dst io.Writer = w.sink
	var comp compressor
	var err error
	switch w.opts.Codec {
	case "zstd":
		// The fastest level: the log must not cost the application a
		// core, and JSON lines compress well at any level. A window of
		// one block (128 KiB; 8 MiB by default) keeps the encoder's
		// history at 256 KiB of the driver's memory, not 2 MiB as with a
		// 1 MiB window: lines repeat within far less, and the log of
		// 100,000 tasks grew by under 10 % (docs/benchmarks-notes.md).
		comp, err = zstd.NewWriter(w.sink, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(zstdWindow), zstd.WithLowerEncoderMem(true))
	case "snappy":
		comp = newSnappyWriter(w.sink)
	case "gzip":
		comp, err = gzip.NewWriterLevel(w.sink, gzip.BestSpeed)
	}
	if err != nil {
		return err
	}
	if comp != nil {
		dst = comp
	}
	w.name, w.comp, w.out, w.size = name, comp, bufio.NewWriterSize(dst, 64<<10), 0
	return nil
}

// endFile hands the spool the rest of the current file's events.
func (w *Writer) endFile() error {
	err := w.out.Flush()
	if w.comp != nil {
		if cerr := w.comp.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// closeFile writes out and closes the current file, the last, and waits
// until the storage has it.
func (w *Writer) closeFile() error {
	if err := w.endFile(); err != nil {
		return err
	}
	return w.sink.finish()
}

// Handle appends e to the log.
//
// A task's start is held until its end or the next flush, whichever comes
// first: most tasks of a busy application end well within the flush
// interval. A successful one then becomes a row of a TaskRows line with
// the others of its stage (a tenth of a TaskEnd line's bytes, and bytes
// are the log's cost: formatting and compressing them); any other takes
// one TaskEnd line with its Launch time (SplitTaskEnd gives the two events
// back). Any other event writes the rows and the held starts first, so the
// log's order only changes among task events.
func (w *Writer) Handle(e events.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handleLocked(e)
}

// HandleAll appends evs, in order, as Handle does each; it is a consumer
// for events.Bus.SubscribeBatches.
func (w *Writer) HandleAll(evs []events.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range evs {
		w.handleLocked(e)
	}
}

func (w *Writer) handleLocked(e events.Event) {
	if w.err != nil || w.done {
		return
	}
	switch e := e.(type) {
	case *events.TaskStart:
		if w.starts.hold(e) {
			return
		}
		// Out of order or too many held: write them, then this one.
		w.writeStarts()
	case *events.TaskEnd:
		// Its start came with it (Launch), or is held here.
		launch := e.Launch
		if launch.IsZero() {
			if s := w.starts.take(e.TaskID); s != nil {
				launch = s.Time
			}
		}
		if !launch.IsZero() {
			if !events.Rowable(e, launch) {
				w.writeLine(events.AppendTaskEnd(w.line[:0], e, launch))
				return
			}
			if !w.rows.Fits(e) {
				w.writeRows()
			}
			w.rows.Add(e, launch)
			if w.opts.Rolling && w.rows.Size() >= w.opts.MaxFileSize/4 {
				// A rolled file's lines stay well under its size.
				w.writeRows()
			}
			return
		}
	default:
		w.writeHeld()
	}
	w.write(e)
}

// writeHeld writes the task rows collected and the task starts held.
func (w *Writer) writeHeld() {
	w.writeRows()
	w.writeStarts()
}

// writeRows writes the task rows collected, if any.
func (w *Writer) writeRows() {
	if w.rows.Len() > 0 {
		w.writeLine(w.rows.Take(), nil)
	}
}

// writeStarts writes the held task starts.
func (w *Writer) writeStarts() {
	for _, s := range w.starts.held.All() {
		if w.err == nil {
			w.write(*s)
		}
	}
	w.starts.held.Clear()
}

// write appends e's line.
func (w *Writer) write(e events.Event) {
	// One buffer serves every event: the log is written one at a time.
	w.writeLine(events.AppendJSON(w.line[:0], e))
}

// writeLine appends an event's encoding, line, unless encoding it failed.
func (w *Writer) writeLine(line []byte, err error) {
	w.line = line
	if err != nil {
		w.fail(err)
		return
	}
	n := int64(len(line)) + 1
	if w.opts.Rolling && w.size > 0 && w.size+n > w.opts.MaxFileSize {
		if err := w.roll(); err != nil {
			w.fail(err)
			return
		}
	}
	w.out.Write(line)
	if err := w.out.WriteByte('\n'); err != nil { // bufio keeps the first write error
		w.fail(err) // the spool's, which names the file
		return
	}
	w.size += n
	w.dirty = true
}

// maxHeldStarts bounds the task starts a Writer holds: a few hundred
// kilobytes, whatever the flush interval.
const maxHeldStarts = 4096

// pendingStarts are task starts not written yet, by TaskID, held in the
// order the scheduler numbers and publishes them in.
type pendingStarts struct {
	held seqmap.Map[*events.TaskStart]
}

// hold keeps a copy of s, unless it would break the order or the bound.
func (p *pendingStarts) hold(s *events.TaskStart) bool {
	if last, ok := p.held.Last(); ok && last >= s.TaskID {
		return false
	}
	if p.held.Slots() >= maxHeldStarts {
		p.held.Compact()
		if p.held.Slots() > maxHeldStarts/2 {
			return false
		}
	}
	p.held.Put(s.TaskID, s)
	return true
}

// take returns the held start of task id, which is no longer held, or nil.
func (p *pendingStarts) take(id int64) *events.TaskStart {
	if s, ok := p.held.Take(id); ok {
		return *s
	}
	return nil
}

// roll ends the current file of a rolled log and starts the next; the
// spool closes the one and creates the other.
func (w *Writer) roll() error {
	if err := w.endFile(); err != nil {
		return err
	}
	w.index++
	next := path.Join(w.dir, eventsName(w.opts.AppID, w.index, w.opts.Codec))
	if err := w.sink.next(next); err != nil {
		return err
	}
	return w.startFile(next)
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
	running, finished := path.Join(w.dir, statusName(w.opts.AppID, true)), path.Join(w.dir, statusName(w.opts.AppID, false))
	if w.st.whole() {
		if err := w.st.put(w.ctx, finished, nil); err != nil {
			return err
		}
		return w.st.remove(w.ctx, running)
	}
	return w.st.rename(w.ctx, running, finished)
}
