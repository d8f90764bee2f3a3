package eventlog

import (
	"fmt"
	"io"
	"sync"
)

// spool carries a Writer's bytes (compressed, when the log is) to its
// storage from a goroutine of its own, so that handing the log an event
// never waits for a disk or an upload: the driver feeds the metrics, the
// web UI's store and the event log from one consumer of its event stream,
// and a stalled file system must not stop the other two. Bytes the storage
// has not taken are bounded by maxPending; past it the log fails, as it
// does on a write error, and the application goes on without it.
//
// Write, next and abort are called with the Writer's lock held; finish
// once, at the end.
type spool struct {
	// open creates the file of a rolled log's next part; path names a
	// file in errors.
	open func(name string) (io.WriteCloser, error)
	path func(name string) string
	// maxPending bounds the bytes queued for the storage.
	maxPending int

	mu      sync.Mutex
	ops     []spoolOp
	pending int
	err     error // the first failure; nothing is written after it
	aborted bool
	wake    chan struct{}
	done    chan struct{}
}

// spoolOp is bytes to write, or the current file to close, followed by
// opening next unless it is "", or a channel to close once everything
// before it is written.
type spoolOp struct {
	data    []byte
	close   bool
	next    string
	written chan struct{}
}

// defaultMaxPending is spool.maxPending: a stalled storage fails the log
// after this many bytes, minutes of a busy application's compressed log.
const defaultMaxPending = 32 << 20

// errBehind is why a log whose storage does not keep up stops.
var errBehind = fmt.Errorf("the storage does not keep up: more than %d MiB of the log wait to be written", defaultMaxPending>>20)

// newSpool starts writing to dst, the file name.
func newSpool(dst io.WriteCloser, name string, open func(string) (io.WriteCloser, error), path func(string) string) *spool {
	s := &spool{open: open, path: path, maxPending: defaultMaxPending, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.run(dst, name)
	return s
}

// Write queues a copy of p, or returns the spool's failure.
func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	if s.pending+len(p) > s.maxPending {
		s.err = errBehind
		return 0, s.err
	}
	if n := len(s.ops); n > 0 && s.ops[n-1].data != nil && !s.ops[n-1].close && s.ops[n-1].written == nil {
		s.ops[n-1].data = append(s.ops[n-1].data, p...)
	} else {
		s.ops = append(s.ops, spoolOp{data: append(make([]byte, 0, max(len(p), 4<<10)), p...)})
	}
	s.pending += len(p)
	s.signal()
	return len(p), nil
}

// next closes the current file once its bytes are written, and opens name
// for those that follow.
func (s *spool) next(name string) error {
	return s.push(spoolOp{close: true, next: name})
}

// finish closes the current file once its bytes are written and returns
// the spool's failure, if any, once it has.
func (s *spool) finish() error {
	if err := s.push(spoolOp{close: true}); err != nil {
		return err
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// wait returns once the bytes queued before it are written, or the spool
// ended.
func (s *spool) wait() {
	written := make(chan struct{})
	if s.push(spoolOp{written: written}) != nil {
		return
	}
	select {
	case <-written:
	case <-s.done:
	}
}

func (s *spool) push(op spoolOp) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.ops = append(s.ops, op)
	s.signal()
	return nil
}

// abort drops what is queued and abandons the current file: an object
// being uploaded is not completed half written.
func (s *spool) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = true
	s.ops, s.pending = nil, 0
	s.signal()
}

func (s *spool) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// failure is the spool's failure, if any.
func (s *spool) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// failed records err as the spool's failure unless it has one.
func (s *spool) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// run writes the queued operations to dst and the files after it, until
// the last is closed, the spool is aborted or a write fails.
func (s *spool) run(dst io.WriteCloser, name string) {
	defer close(s.done)
	defer func() {
		if dst == nil {
			return
		}
		if a, ok := dst.(interface{ Abort() }); ok {
			a.Abort()
		} else {
			dst.Close()
		}
	}()
	for {
		s.mu.Lock()
		for len(s.ops) == 0 && !s.aborted {
			s.mu.Unlock()
			<-s.wake
			s.mu.Lock()
		}
		ops, aborted := s.ops, s.aborted
		s.ops = nil
		s.mu.Unlock()
		if aborted {
			return
		}
		for _, op := range ops {
			if op.data != nil {
				_, err := dst.Write(op.data)
				s.mu.Lock()
				s.pending -= len(op.data)
				s.mu.Unlock()
				if err != nil {
					s.failed(fmt.Errorf("writing %s: %w", s.path(name), err))
					return
				}
			}
			if op.written != nil {
				close(op.written)
			}
			if !op.close {
				continue
			}
			err := dst.Close()
			dst = nil
			if err != nil {
				s.failed(fmt.Errorf("writing %s: %w", s.path(name), err))
				return
			}
			if op.next == "" {
				return
			}
			name = op.next
			if dst, err = s.open(name); err != nil {
				s.failed(fmt.Errorf("creating %s: %w", s.path(name), err))
				return
			}
		}
	}
}
