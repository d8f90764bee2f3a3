package ctl

import (
	"net"
	"time"

	"github.com/drover-project/drover/internal/rpc"
)

// KeepAlive is the TCP keep-alive of control connections, on both ends:
// the kernel closes a connection whose peer stopped answering after about
// 30 s + 4 × 5 s, as gRPC's keep-alive pings (Time 30 s, Timeout 20 s) did,
// without a goroutine or timer in the process.
var KeepAlive = net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 4}

// Options tune a connection's limits; the zero value is the defaults.
type Options struct {
	// WriteTimeout bounds one write: a peer that does not read for that
	// long is taken for dead and the connection closed (2 minutes when 0).
	WriteTimeout time.Duration
	// HandshakeTimeout bounds the TLS handshake, the preamble, hello and
	// proof (20 s when 0; a client's context may end it sooner).
	HandshakeTimeout time.Duration
	// RegisterTimeout bounds, on a server, the wait for a connection's
	// first message (an executor's Register) once the handshake is done
	// (10 s when 0). An executor sends it at once, with the preamble or
	// right after its proof: only a stalled or hostile peer takes longer.
	RegisterTimeout time.Duration
	// MaxFrame is the largest frame read or written once the peer
	// registered (rpc.MaxMessageSize when 0). Until then a server reads
	// frames of at most MaxFrameBeforeRegister bytes, and a client a hello
	// of at most as many.
	MaxFrame int
	// MaxPendingPerPeer bounds, on a server, one peer address's
	// connections that have not sent their first message: in the
	// handshake, or waiting for the Register (64 when 0). More from that
	// address wait, unread, until one of those registers or is closed,
	// up to MaxQueuedPerPeer; past that they are closed at once.
	MaxPendingPerPeer int
}

// MaxFrameBeforeRegister is the largest frame a server reads before the
// connection's first message, and a client's largest hello: a Register is
// a few hundred bytes, a hello at most 73 (a nonce's 32 bytes or, with
// TLS, a signature's 72, after its kind). Until a peer has registered it is
// nobody, and its frames' headers must not make the driver hold more.
const MaxFrameBeforeRegister = 64 << 10

// MaxQueuedPerPeer is how many connections of one peer address wait for
// a place among its MaxPendingPerPeer: generous, since executors of a
// local cluster (and benchmarks' thousands) all connect from 127.0.0.1 at
// once, and a waiting connection costs a socket and a few hundred bytes,
// no goroutine and no buffer.
const MaxQueuedPerPeer = 4096

func (o Options) withDefaults() Options {
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 2 * time.Minute
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 20 * time.Second
	}
	if o.RegisterTimeout <= 0 {
		o.RegisterTimeout = 10 * time.Second
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = rpc.MaxMessageSize
	}
	if o.MaxPendingPerPeer <= 0 {
		// Far more than one address's executors have in their handshakes
		// at once: a handshake takes a millisecond or two of the driver's
		// CPU, so 64 at once is more than two cores get through; 64
		// stalled connections hold at most 64 × 64 KiB of frames.
		o.MaxPendingPerPeer = 64
	}
	return o
}
