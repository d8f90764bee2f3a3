package ctl

import "sync"

// workers run a server's short work off the stacks of its connections'
// goroutines (see recvShallow): TLS handshakes, reading and decoding a
// frame, a handler's work on a message. A goroutine that finished a piece
// waits for the next one instead of ending, so that its stack, grown to
// what such work needs (8 KiB and more for a TLS read, more for a
// handshake), serves again: a new goroutine would grow its 2 KiB twice or
// more, each time copying its stack, about a tenth of a driver's CPU while
// 5,000 executors register. Only as many goroutines as there is work at
// once exist, and at most maxIdle of them wait.
type workers struct {
	mu     sync.Mutex
	idle   []chan func()
	closed bool
}

// maxIdle bounds the goroutines waiting for work, a few hundred KiB of
// stacks at most.
const maxIdle = 32

// run runs f on a waiting goroutine, or a new one if none waits.
func (w *workers) run(f func()) {
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		next := w.idle[n-1]
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		next <- f
		return
	}
	w.mu.Unlock()
	go w.work(f)
}

// do runs f as run does and waits for it.
func (w *workers) do(f func()) {
	done := make(chan struct{})
	w.run(func() {
		defer close(done)
		f()
	})
	<-done
}

// work runs f, then what run hands it, until it is not wanted.
func (w *workers) work(f func()) {
	var next chan func()
	for f != nil {
		f()
		w.mu.Lock()
		if w.closed || len(w.idle) >= maxIdle {
			w.mu.Unlock()
			return
		}
		if next == nil {
			next = make(chan func(), 1)
		}
		// Last in, first out: the goroutine that ran last has the
		// stack most likely still grown.
		w.idle = append(w.idle, next)
		w.mu.Unlock()
		f = <-next
	}
}

// stop ends the waiting goroutines, and those that finish later.
func (w *workers) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, next := range w.idle {
		next <- nil
	}
	w.idle = nil
}
