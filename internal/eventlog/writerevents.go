package eventlog

import (
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/seqmap"
)

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
