package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// A front stands in for the load balancer that, in production, sits between
// a cluster's clients and its API servers. With Options.APIServers > 1,
// Env.URL and every component (scheduler, controller manager, kwok, process
// nodes and their pods, Kueue) reach the API through it, so that killing any
// one server leaves the cluster working while another lives; Env.URLs still
// reach each server directly.
//
// It forwards TCP, so TLS passes through unchanged (the serving certificate
// covers 127.0.0.1, whatever the port). Each connection goes to the first
// server, in order, that accepts it: a killed server refuses at once, so new
// connections skip it, and the connections it had break, so their clients
// reconnect through the front to the next one.
type front struct {
	ln       net.Listener
	backends []string // host:port of each API server, server i at i
	names    []string // what the log calls each backend
	log      *os.File
	// ctx ends with close, and with it the dials in progress.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	// serving[i] is set once server i answered its readiness check, and
	// cleared by Env.Kill: a restarted kube-apiserver listens before it is
	// ready, and until its caches fill it may fail requests it would serve
	// later, as a load balancer's health check would know.
	serving []bool
}

// frontDialTimeout bounds each dial of an API server: on loopback a live one
// answers in microseconds, a dead one refuses at once.
const frontDialTimeout = 200 * time.Millisecond

// startFront listens on listen (host:port, port 0 for a free one) and
// forwards to the API servers at urls (https://127.0.0.1:<port>), logging
// each connection to logPath. Each server takes connections once
// setServing says it is ready.
func startFront(listen string, urls []string, logPath string) (*front, error) {
	var backends, names []string
	for i, u := range urls {
		backends = append(backends, strings.TrimPrefix(u, "https://"))
		names = append(names, APIServerName(i))
	}
	return newFront(listen, backends, names, make([]bool, len(urls)), logPath)
}

// startForward listens on listen and forwards each connection to the TCP
// address backend, which is taken as ready.
func startForward(listen, backend, logPath string) (*front, error) {
	return newFront(listen, []string{backend}, []string{backend}, []bool{true}, logPath)
}

func newFront(listen string, backends, names []string, serving []bool, logPath string) (*front, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the front's log: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("listening on %s to forward to %s: %w", listen, strings.Join(names, ", "), err)
	}
	f := &front{ln: ln, log: log, conns: map[net.Conn]struct{}{}, backends: backends, names: names, serving: serving}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.wg.Go(f.serve)
	return f, nil
}

// url is the front's https://127.0.0.1:<port>.
func (f *front) url() string { return "https://" + f.ln.Addr().String() }

func (f *front) serve() {
	for {
		c, err := f.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors, say: wait rather than spin.
			f.logf("accepting: %v", err)
			select {
			case <-f.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if !f.track(c) {
			return
		}
		f.wg.Go(func() { f.forward(c) })
	}
}

// forward connects client to the first API server that accepts and copies
// bytes both ways until either side ends, then closes both.
func (f *front) forward(client net.Conn) {
	defer f.untrack(client)
	backend, i, skipped := f.dial()
	if backend == nil {
		f.logf("%s: no API server accepts (%s)", client.RemoteAddr(), strings.Join(skipped, "; "))
		return
	}
	if !f.track(backend) {
		return
	}
	defer f.untrack(backend)
	if len(skipped) > 0 {
		f.logf("%s → %s, skipping %s", client.RemoteAddr(), f.names[i], strings.Join(skipped, "; "))
	} else {
		f.logf("%s → %s", client.RemoteAddr(), f.names[i])
	}
	f.wg.Go(func() {
		_, _ = io.Copy(backend, client)
		_ = client.Close()
		_ = backend.Close()
	})
	_, _ = io.Copy(client, backend)
}

// dial returns a connection to the first serving API server that accepts
// one, its index, and why each one before it was skipped.
func (f *front) dial() (net.Conn, int, []string) {
	var skipped []string
	d := net.Dialer{Timeout: frontDialTimeout}
	for i, addr := range f.backends {
		f.mu.Lock()
		serving := f.serving[i]
		f.mu.Unlock()
		if !serving {
			skipped = append(skipped, f.names[i]+": not ready")
			continue
		}
		c, err := d.DialContext(f.ctx, "tcp", addr)
		if err == nil {
			return c, i, skipped
		}
		skipped = append(skipped, fmt.Sprintf("%s: %v", f.names[i], err))
	}
	return nil, 0, skipped
}

// track records c so that close can end it; it closes c and returns false
// once the front is closed.
func (f *front) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		_ = c.Close()
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *front) untrack(c net.Conn) {
	_ = c.Close()
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// setServing marks the backend called name as ready for new connections,
// or not; other names are ignored.
func (f *front) setServing(name string, ok bool) {
	i := slices.Index(f.names, name)
	if i < 0 {
		return
	}
	f.mu.Lock()
	f.serving[i] = ok
	f.mu.Unlock()
}

func (f *front) logf(format string, args ...any) {
	// Not opts.Logf: that may be a finished test's t.Logf by now (Shared).
	_, _ = fmt.Fprintf(f.log, time.Now().Format("15:04:05.000000 ")+format+"\n", args...)
}

// close stops accepting, ends every connection and waits for every
// goroutine of the front to return.
func (f *front) close() {
	f.mu.Lock()
	f.closed = true
	conns := make([]net.Conn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	f.cancel()
	_ = f.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	f.wg.Wait()
	_ = f.log.Close()
}
