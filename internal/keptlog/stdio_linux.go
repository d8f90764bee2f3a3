package keptlog

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
)

// CaptureStdio sends what the process writes to its standard output and
// error (its log, a user's fmt.Println, a library's prints) through pipes
// to where it went before and to w, so that a kept log holds the bytes the
// pod's log does. stop restores the descriptors and returns once every
// byte was passed on. A fatal panic is written straight to the former
// standard error as well (debug.SetCrashOutput): the process dies before
// the pipe is read, and the pod's log must still show why.
func CaptureStdio(w io.Writer) (stop func(), err error) {
	type stream struct {
		fd, saved int
		orig      *os.File // saved, as a file
		done      chan struct{}
	}
	var streams []stream
	undo := func() {
		for _, s := range streams {
			_ = syscall.Dup3(s.saved, s.fd, 0) // closes the pipe's write end
			<-s.done
			s.orig.Close()
		}
	}
	var mu sync.Mutex // one stream's chunk at a time into w
	for _, fd := range []int{1, 2} {
		saved, err := syscall.Dup(fd)
		if err != nil {
			undo()
			return nil, fmt.Errorf("capturing file descriptor %d: %w", fd, err)
		}
		r, pw, err := os.Pipe()
		if err != nil {
			_ = syscall.Close(saved)
			undo()
			return nil, fmt.Errorf("capturing file descriptor %d: %w", fd, err)
		}
		if err := syscall.Dup3(int(pw.Fd()), fd, 0); err != nil {
			r.Close()
			pw.Close()
			_ = syscall.Close(saved)
			undo()
			return nil, fmt.Errorf("capturing file descriptor %d: %w", fd, err)
		}
		pw.Close() // fd is now the pipe's only write end
		orig := os.NewFile(uintptr(saved), fmt.Sprintf("fd%d", fd))
		if fd == 2 {
			_ = debug.SetCrashOutput(orig, debug.CrashOptions{})
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer r.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				if n > 0 {
					_, _ = orig.Write(buf[:n])
					mu.Lock()
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
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = debug.SetCrashOutput(nil, debug.CrashOptions{})
			undo()
		})
	}, nil
}
