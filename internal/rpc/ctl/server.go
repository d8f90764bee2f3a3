package ctl

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// ServerStream is the driver's end of one executor's control stream.
type ServerStream struct{ c *conn }

// Recv returns the executor's next message; io.EOF once the executor
// ended the stream (CloseSend), another error once the connection broke.
// One goroutine at a time may call it: the handler's.
//
// The first message is the executor's Register: until it is read, frames
// are at most MaxFrameBeforeRegister bytes and it must come within
// RegisterTimeout, and the connection holds one of its peer's
// MaxPendingPerPeer places. The handler decides on the Register before it
// reads again, and ends the stream if it refuses it, so every later frame
// comes from a peer it accepted: those may reach MaxFrame and take their
// time.
func (s *ServerStream) Recv() (*pb.ExecutorMessage, error) {
	m := new(pb.ExecutorMessage)
	pre := s.c.pre
	if err := s.c.recv(m); err != nil {
		if pre != nil {
			return nil, pre.srv.refusedFirst(s.c, err)
		}
		return nil, err
	}
	if pre != nil {
		s.c.maxRecv = s.c.opts.MaxFrame
		_ = s.c.nc.SetReadDeadline(time.Time{})
		pre.srv.release(s.c)
		s.c.pre = nil
	}
	return m, nil
}

// Send writes m to the executor. It may be called from any goroutine, also
// while another sends (they take turns) or after the handler returned
// (then it fails).
func (s *ServerStream) Send(m *pb.DriverMessage) error { return s.c.send(m) }

// OffStack runs f on another goroutine and waits for it. The stream's
// goroutine, the handler's, waits for the executor's next message most of
// its life, and a goroutine's stack never shrinks back below the 4 KiB or
// more that deep calls grew it to: a handler that does its work through
// OffStack keeps a new goroutine's 2 KiB (on Linux, where Recv waits that
// way too). f runs on one of the server's goroutines that ran such work
// before (whose stacks are grown already), or a new one if none is free.
func (s *ServerStream) OffStack(f func()) { s.c.workers.do(f) }

// Go runs f as OffStack does, without waiting for it: a sender of queued
// messages started for each burst would otherwise be a new goroutine,
// whose stack grows (copied each time) to what a TLS write needs, about
// 5 % of a driver's CPU while 5,000 executors register and heartbeat.
func (s *ServerStream) Go(f func()) { s.c.workers.run(f) }

// Context ends when the connection closes.
func (s *ServerStream) Context() context.Context { return s.c.context() }

// Peer is the executor's address.
func (s *ServerStream) Peer() string { return s.c.nc.RemoteAddr().String() }

// Handler serves one stream. Returning ends it: nil as an OK status (the
// executor reads io.EOF), an error as its gRPC status (Unknown if it has
// none), which the executor's Recv returns.
type Handler func(*ServerStream) error

// Server accepts control connections.
type Server struct {
	auth    rpc.Auth
	opts    Options
	log     *slog.Logger
	handler Handler

	wg    sync.WaitGroup
	mu    sync.Mutex
	lis   []net.Listener
	conns map[*conn]struct{}
	done  bool
	// peers holds, by peer address, the connections that have not sent
	// their first message (Options.MaxPendingPerPeer), of which at most
	// maxQueued wait (MaxQueuedPerPeer; tests lower it).
	peers     map[peerID]*peerSlots
	maxQueued int

	workers workers
}

// NewServer returns a server that authenticates connections with auth and
// runs handler for each; log hears of refused connections that the TLS
// handshake does not log itself (auth's logger does those).
func NewServer(auth rpc.Auth, opts Options, log *slog.Logger, handler Handler) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{auth: auth, opts: opts.withDefaults(), log: log, handler: handler, conns: map[*conn]struct{}{},
		peers: map[peerID]*peerSlots{}, maxQueued: MaxQueuedPerPeer}
}

// peerSlots are one peer address's connections before their first
// message: pending hold a place (in the handshake or waiting for the
// Register), queued wait for one, oldest first, unread.
type peerSlots struct {
	pending int
	queued  []*conn
	// warned is set once a refusal of this peer's connections was logged,
	// so that a flood is one line, not one per connection.
	warned bool
}

// peerID is the address whose connections count together: the IP, as an
// executor (or an attacker) opens connections from many ports; other is
// the address of a connection that is not TCP (tests' pipes).
type peerID struct {
	ip    netip.Addr
	other string
}

func peerOf(a net.Addr) peerID {
	if t, ok := a.(*net.TCPAddr); ok {
		return peerID{ip: t.AddrPort().Addr().Unmap()}
	}
	s := a.String()
	if host, _, err := net.SplitHostPort(s); err == nil {
		return peerID{other: host}
	}
	return peerID{other: s}
}

// admitLocked counts c, a new connection, against its peer: it starts
// (true) if the peer has a place free, else waits in the queue; refused
// when the queue is full too.
func (s *Server) admitLocked(c *conn) (start, refused bool) {
	p := s.peers[c.pre.peer]
	if p == nil {
		p = &peerSlots{}
		s.peers[c.pre.peer] = p
	}
	switch {
	case p.pending < s.opts.MaxPendingPerPeer:
		p.pending++
		c.pre.pending = true
		return true, false
	case len(p.queued) < s.maxQueued:
		p.queued = append(p.queued, c)
		return false, false
	}
	return false, true
}

// release gives up c's place among its peer's pending connections, if it
// holds one (its first message was read, or it is closed), and starts the
// queued connections that now have one. A queued connection older than
// HandshakeTimeout is closed instead: its client gave up (Dial's bound).
func (s *Server) release(c *conn) {
	var start, stale []*conn
	s.mu.Lock()
	if c.pre == nil || !c.pre.pending {
		s.mu.Unlock()
		return
	}
	c.pre.pending = false
	p := s.peers[c.pre.peer]
	p.pending--
	now := time.Now()
	for !s.done && len(p.queued) > 0 && p.pending < s.opts.MaxPendingPerPeer {
		next := p.queued[0]
		p.queued[0] = nil
		p.queued = p.queued[1:]
		if now.Sub(next.pre.accepted) > s.opts.HandshakeTimeout {
			stale = append(stale, next)
			continue
		}
		next.pre.pending = true
		p.pending++
		start = append(start, next)
	}
	if p.pending == 0 && len(p.queued) == 0 {
		delete(s.peers, c.pre.peer)
	}
	s.mu.Unlock()
	for _, q := range stale {
		s.forget(q)
	}
	for _, q := range start {
		s.workers.run(func() { s.serve(q) })
	}
}

// refusedFirst is the error of a first Recv that failed: a peer that sent
// nothing within RegisterTimeout, or a first frame over
// MaxFrameBeforeRegister, is logged as refused and told why.
func (s *Server) refusedFirst(c *conn, err error) error {
	peer := c.nc.RemoteAddr().String()
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = status.Errorf(codes.DeadlineExceeded, "ctl: no registration from %s within %s of its handshake", peer, s.opts.RegisterTimeout)
	case status.Code(err) == codes.ResourceExhausted:
		err = status.Errorf(codes.ResourceExhausted, "%s, before registration", status.Convert(err).Message())
	default:
		return err
	}
	s.log.Warn(rpc.RefusedMessage, "peer", peer, "err", err)
	return err
}

// Serve accepts connections on lis until Stop or GracefulStop, and then
// returns nil. Each connection's handshake runs on one of the server's
// workers, and then its handler on a goroutine of its own.
func (s *Server) Serve(lis net.Listener) error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		_ = lis.Close()
		return nil
	}
	s.lis = append(s.lis, lis)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	var backoff time.Duration
	for {
		nc, err := lis.Accept()
		if err != nil {
			s.mu.Lock()
			done := s.done
			s.mu.Unlock()
			if done || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors, say: wait and try again, as
			// net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accepting a control connection", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		c := newConn(nc, s.opts)
		c.maxRecv = min(MaxFrameBeforeRegister, s.opts.MaxFrame)
		c.pre = &preRegister{srv: s, peer: peerOf(nc.RemoteAddr()), accepted: time.Now()}
		c.workers = &s.workers
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			_ = nc.Close()
			return nil
		}
		start, refused := s.admitLocked(c)
		warn := false
		if refused {
			p := s.peers[c.pre.peer]
			warn, p.warned = !p.warned, true
		} else {
			s.conns[c] = struct{}{}
			s.wg.Add(1)
		}
		s.mu.Unlock()
		switch {
		case refused:
			if warn {
				s.log.Warn(rpc.RefusedMessage, "peer", nc.RemoteAddr().String(),
					"err", fmt.Sprintf("over %d connections of this address wait for their handshake or registration; closing more until they are done", s.maxQueued))
			}
			_ = nc.Close()
		case start:
			s.workers.run(func() { s.serve(c) })
		}
	}
}

// serve runs c's handshake (on a worker), then hands the connection to a
// goroutine of its own for the stream: the handshake (certificate
// verification, key exchange) grows a goroutine's stack to several times
// what waiting for the stream needs, and a stack shrinks only slowly, so
// the goroutine that lives as long as the connection starts afresh.
func (s *Server) serve(c *conn) {
	stream, ok := s.handshake(c)
	if !ok {
		s.forget(c)
		return
	}
	go s.run(c, stream)
}

// run is the goroutine of an established connection: the handler, then
// the end of the stream.
func (s *Server) run(c *conn, stream *ServerStream) {
	defer s.forget(c)
	err := s.handler(stream)
	if err == nil {
		if c.write(controlFrame(kindEnd, nil), errEnded) == nil {
			c.close()
		}
		return
	}
	if c.write(errorFrame(err), errEnded) == nil {
		c.lingerClose(time.Second)
	}
}

// forget closes c and drops it from the server's connections.
func (s *Server) forget(c *conn) {
	c.close()
	s.release(c)
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// handshake secures and authenticates c, and reports whether it may carry
// a stream.
func (s *Server) handshake(c *conn) (*ServerStream, bool) {
	peer := c.nc.RemoteAddr().String()
	// The socket's deadline bounds the handshake: a context with one
	// would cost crypto/tls a goroutine per handshake to watch it.
	_ = c.nc.SetDeadline(time.Now().Add(s.opts.HandshakeTimeout))
	nc, err := s.auth.ServerHandshake(context.Background(), c.nc)
	if err != nil {
		// rpc logged the refusal. A drover client without TLS is told
		// why in its own protocol: it stops instead of retrying.
		var header tls.RecordHeaderError
		if errors.As(err, &header) && header.Conn != nil && string(header.RecordHeader[:]) == preamble[:len(header.RecordHeader)] {
			if c.write(errorFrame(status.Error(codes.Unauthenticated, "the driver requires mutual TLS (spark.network.crypto.enabled) and this executor does not use it")), errEnded) == nil {
				c.lingerClose(time.Second)
			}
		}
		return nil, false
	}
	if nc != c.nc {
		// TLS: the frames go through the TLS connection from now on.
		c.mu.Lock()
		c.nc = nc
		c.mu.Unlock()
	}
	if err := c.fill(len(preamble)); err != nil {
		return nil, false
	}
	got := c.buf[c.r : c.r+len(preamble)]
	c.r += len(preamble)
	if string(got) != preamble {
		if got[0] == 0x16 { // a TLS handshake record
			s.log.Warn(rpc.RefusedMessage, "peer", peer, "err", "a TLS client, and this driver does not use TLS (spark.network.crypto.enabled is off)")
			// A fatal handshake_failure alert: the client stops at once.
			_, _ = c.nc.Write([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28})
		} else {
			s.log.Warn(rpc.RefusedMessage, "peer", peer, "err", "not a drover control-stream client")
		}
		return nil, false
	}
	var nonce []byte
	if s.auth.TokenRequired() {
		nonce = make([]byte, 32)
		_, _ = rand.Read(nonce)
	}
	hello := nonce
	if s.auth.TLSEnabled() {
		// The driver's key signs this connection: an executor that
		// resumed the prepared session learns that the server is the
		// driver, not another holder of the executors' Secret.
		proof, err := s.auth.ChannelProof(c.nc)
		if err != nil {
			s.log.Warn("control connection: signing it", "peer", peer, "err", err)
			return nil, false
		}
		hello = proof
	}
	if nonce == nil && c.w > c.r {
		// Nothing for the client to prove, and it sent its first message
		// with the preamble (a pipelined client, which reads the hello
		// before the first answer): the hello goes out with that answer,
		// one write and one TLS record less per connection. A client
		// waiting for the hello before it sends gets it at once.
		c.unsent = controlFrame(kindHello, hello)
	} else if c.write(controlFrame(kindHello, hello), nil) != nil {
		return nil, false
	}
	if nonce != nil {
		if err := s.checkProof(c, nonce); err != nil {
			s.log.Warn(rpc.RefusedMessage, "peer", peer, "err", err)
			if c.write(errorFrame(status.Error(codes.Unauthenticated, err.Error())), errEnded) == nil {
				c.lingerClose(time.Second)
			}
			return nil, false
		}
	}
	// The write deadline is each write's; the read deadline is now the
	// registration's: the executor sends its Register at once.
	_ = c.nc.SetDeadline(time.Time{})
	if c.pre != nil {
		c.pre.deadline = time.Now().Add(s.opts.RegisterTimeout)
		_ = c.nc.SetReadDeadline(c.pre.deadline)
	}
	c.raw = rawConn(c.nc)
	return &ServerStream{c: c}, true
}

// errNoProof is a client's first frame that is no proof of the secret.
var errNoProof = errors.New("missing or wrong application secret (spark.authenticate is on)")

// checkProof reads the client's proof of the secret for nonce. Until then
// the peer is nobody: a frame longer than a proof is refused from its
// header, where reading it would have the driver allocate up to MaxFrame
// bytes for each connection of a peer that knows no secret.
func (s *Server) checkProof(c *conn, nonce []byte) error {
	limit := c.maxRecv
	c.maxRecv = 1 + rpc.ProofSize
	defer func() { c.maxRecv = limit }()
	control, p, err := c.next()
	if status.Code(err) == codes.ResourceExhausted {
		// A client without the secret sends its first message at once.
		return errNoProof
	}
	if err != nil {
		return err
	}
	defer c.release()
	if !control || len(p) == 0 || p[0] != kindProof {
		return errNoProof
	}
	return s.auth.CheckProof(nonce, p[1:])
}

// stop stops accepting, closes the connections too if hard, and waits for
// every connection's goroutine.
func (s *Server) stop(hard bool) {
	s.mu.Lock()
	s.done = true
	for _, l := range s.lis {
		_ = l.Close()
	}
	s.lis = nil
	var conns, queued []*conn
	if hard {
		for c := range s.conns {
			conns = append(conns, c)
		}
	}
	// Queued connections never started: nothing to wait for.
	for key, p := range s.peers {
		queued = append(queued, p.queued...)
		p.queued = nil
		if p.pending == 0 {
			delete(s.peers, key)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	for _, c := range queued {
		s.forget(c)
	}
	s.wg.Wait()
	// Every piece of work ran for a connection, within s.wg.
	s.workers.stop()
}

// GracefulStop stops accepting connections and waits for the handlers of
// those open to return.
func (s *Server) GracefulStop() { s.stop(false) }

// Stop stops accepting connections, closes those open and waits for their
// handlers to return.
func (s *Server) Stop() { s.stop(true) }
