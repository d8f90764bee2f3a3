package eventlog

import (
	"bufio"
	"fmt"
	"io"
	"path"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func (w *Writer) startSingle() error {
	if err := w.st.mkdir(w.ctx, ""); err != nil {
		return err
	}
	w.final = singleName(w.logName(), w.opts.Codec)
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
	w.dir = rollingDirName(w.logName())
	if err := w.clear(w.dir); err != nil {
		return err
	}
	if err := w.st.mkdir(w.ctx, w.dir); err != nil {
		return err
	}
	if err := w.st.put(w.ctx, path.Join(w.dir, statusName(w.logName(), true)), nil); err != nil {
		return err
	}
	w.index = 1
	return w.open(path.Join(w.dir, eventsName(w.logName(), w.index, w.opts.Codec)))
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

// roll ends the current file of a rolled log and starts the next; the
// spool closes the one and creates the other.
func (w *Writer) roll() error {
	if err := w.endFile(); err != nil {
		return err
	}
	w.index++
	next := path.Join(w.dir, eventsName(w.logName(), w.index, w.opts.Codec))
	if err := w.sink.next(next); err != nil {
		return err
	}
	return w.startFile(next)
}
