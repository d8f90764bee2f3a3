package keptlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
)

// capturing is set while a capture runs: a process has one pair of
// descriptors to capture.
var capturing atomic.Bool

// CaptureStdio sends what the process writes to its standard output and
// error (a user's fmt.Println, a library's prints) through pipes to where
// it went before and to w, so that a kept log holds the bytes the pod's
// log does.
//
// A pipe is read by a goroutine, so what is written just before the
// process ends abruptly (os.Exit, a fatal error) could miss both logs.
// Hence what matters most does not take that way: the process's own log
// goes through direct, which writes to the former standard error and to w
// at once, and so does the standard library's log package (log.Fatal)
// while the capture runs; a fatal panic is written straight to the former
// standard error too (debug.SetCrashOutput). Only raw prints of the last
// moment before an abrupt exit can be lost.
//
// stop restores the descriptors and waits until every byte was passed on,
// or until ctx ends (a child process that inherited a descriptor may hold
// the pipe open: what it writes later is still passed on). One capture
// runs at a time in a process.
func CaptureStdio(w io.Writer) (direct io.Writer, stop func(context.Context), err error) {
	if !capturing.CompareAndSwap(false, true) {
		return nil, nil, errors.New("capturing standard output and error: a capture runs already")
	}
	type stream struct {
		fd, saved int
		orig      *os.File // saved, as a file
		done      chan struct{}
	}
	var streams []stream
	var mu sync.Mutex // one piece at a time into both logs: one order in both
	undo := func(ctx context.Context) {
		for _, s := range streams {
			_ = syscall.Dup3(s.saved, s.fd, 0) // closes the pipe's write end
		}
		for _, s := range streams {
			select {
			case <-s.done:
			case <-ctx.Done():
			}
		}
		// The saved descriptors stay open: a forwarder still running
		// writes to them, and they are the process's former outputs.
		capturing.Store(false)
	}
	fail := func(fd int, err error) (io.Writer, func(context.Context), error) {
		undo(context.Background())
		return nil, nil, fmt.Errorf("capturing file descriptor %d: %w", fd, err)
	}
	for _, fd := range []int{1, 2} {
		syscall.ForkLock.RLock()
		saved, err := syscall.Dup(fd)
		if err == nil {
			syscall.CloseOnExec(saved) // children get the pipe, not this
		}
		syscall.ForkLock.RUnlock()
		if err != nil {
			return fail(fd, err)
		}
		r, pw, err := os.Pipe()
		if err != nil {
			_ = syscall.Close(saved)
			return fail(fd, err)
		}
		if err := syscall.Dup3(int(pw.Fd()), fd, 0); err != nil {
			r.Close()
			pw.Close()
			_ = syscall.Close(saved)
			return fail(fd, err)
		}
		pw.Close() // fd is now the pipe's only write end
		orig := os.NewFile(uintptr(saved), fmt.Sprintf("fd%d", fd))
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer r.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				if n > 0 {
					mu.Lock()
					_, _ = orig.Write(buf[:n])
					_, _ = w.Write(buf[:n])
					mu.Unlock()
				}
				if err != nil {
					return
				}
			}
		}()
		streams = append(streams, stream{fd: fd, saved: saved, orig: orig, done: done})
	}
	stderr := streams[1].orig
	_ = debug.SetCrashOutput(stderr, debug.CrashOptions{})
	direct = &directWriter{mu: &mu, to: stderr, kept: w}
	logOut := log.Writer()
	log.SetOutput(direct)
	var once sync.Once
	return direct, func(ctx context.Context) {
		once.Do(func() {
			log.SetOutput(logOut)
			_ = debug.SetCrashOutput(nil, debug.CrashOptions{})
			undo(ctx)
		})
	}, nil
}

// directWriter writes to the former standard error and to the kept log
// at once, in the order of the captured streams.
type directWriter struct {
	mu   *sync.Mutex
	to   *os.File
	kept io.Writer
}

func (d *directWriter) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, err := d.to.Write(p)
	_, _ = d.kept.Write(p[:n])
	return n, err
}
