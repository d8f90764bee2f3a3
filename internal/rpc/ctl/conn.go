package ctl

import (
	"context"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// preamble opens every connection, client to server, inside TLS when there
// is TLS. Its first byte is no TLS record type, so a TLS server tells a
// plaintext client from a TLS one by the first record header.
const preamble = "DRVCTL1\n"

// Control frames: the first byte of a control frame's payload.
const (
	kindHello byte = 1 // server → client, first: the nonce to prove, if any
	kindProof byte = 2 // client → server: rpc.Auth.Proof(nonce)
	kindEnd   byte = 3 // the sender sends nothing more (io.EOF to the reader)
	kindError byte = 4 // server → client: uvarint code, message (a gRPC status)
)

// pooledSize is the size of the pooled buffers that frames are read into
// and written from, and the largest write buffer kept for reuse.
const pooledSize = 64 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, pooledSize); return &b }}

// tinySize is the read buffer every connection holds: a connection waits
// for its next frame reading into it, so that an idle connection (most of a
// driver's, most of the time) holds no larger buffer. It is more than a
// frame header (at most binary.MaxVarintLen64 bytes), and holds a small
// frame, such as a heartbeat, whole.
const tinySize = 32

// conn is one framed connection. One goroutine at a time reads (recv);
// any number write (send), one at a time under wmu.
type conn struct {
	nc   net.Conn
	opts Options

	// Reader's state: the bytes read and not yet consumed are buf[r:w].
	// buf is tiny while they fit, a pooled buffer (pooled) while a frame
	// larger than tiny is read and while what was read with it is not
	// consumed, or a buffer of its own for a frame over pooledSize. rerr is
	// sticky: once the stream ended or broke, every later recv returns it.
	tiny    [tinySize]byte
	buf     []byte
	pooled  *[]byte
	r, w    int
	discard int // bytes of the last frame still in buf[r:w]
	rerr    error
	// maxRecv is the largest frame read: opts.MaxFrame, or less until the
	// peer registered (MaxFrameBeforeRegister on a server).
	maxRecv int
	// raw is the socket, on a server where recv waits for data on it
	// without reading (recvShallow), on the server's workers; nil
	// otherwise.
	raw     syscall.RawConn
	workers *workers
	// hello: a client that sent its preamble without waiting for the
	// server's hello (pipelined) reads it before the first message.
	hello bool
	// checkHello, on a client, checks the server's hello: with TLS, its
	// proof of the driver's key.
	checkHello func(payload []byte) error
	// closed is under mu; here, beside hello, it fills what would be
	// padding (a connection is 304 bytes, in the 320-byte size class).
	closed bool

	wmu  sync.Mutex
	werr error // sticky: the stream was ended or a write failed
	// unsent goes out before the next frame: a pipelined client's
	// preamble, in one write with its first message.
	unsent []byte

	mu     sync.Mutex
	ctx    context.Context // made on demand (Context)
	cancel context.CancelFunc

	// pre is a server's connection until its first message: nil on a
	// client, and once registered, so that the driver's connections of
	// registered executors do not carry it.
	pre *preRegister
}

// preRegister is what a server knows of a connection until its first
// message.
type preRegister struct {
	srv      *Server
	peer     peerID    // the key of its per-peer count
	accepted time.Time // when it was accepted
	// deadline is the read deadline recvShallow puts back after its look
	// at what is buffered: the Register's.
	deadline time.Time
	// pending is set while it holds one of its peer's places (under the
	// server's mu).
	pending bool
}

// readDeadline is the read deadline the connection waits with.
func (c *conn) readDeadline() time.Time {
	if c.pre == nil {
		return time.Time{}
	}
	return c.pre.deadline
}

func newConn(nc net.Conn, opts Options) *conn {
	c := &conn{nc: nc, opts: opts, maxRecv: opts.MaxFrame}
	c.buf = c.tiny[:]
	return c
}

// close closes the connection and ends its context; it may be called
// more than once, from any goroutine.
func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	_ = c.nc.Close()
	if c.cancel != nil {
		c.cancel()
	}
}

// context returns a context that ends when the connection closes.
func (c *conn) context() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancel(context.Background())
		if c.closed {
			c.cancel()
		}
	}
	return c.ctx
}

// lingerClose closes after an error frame: half-closes, then reads what
// the peer still sends for a moment, so that closing with unread data does
// not reset the connection before the peer read the error.
func (c *conn) lingerClose(wait time.Duration) {
	type closeWriter interface{ CloseWrite() error }
	if cw, ok := c.nc.(closeWriter); ok && cw.CloseWrite() == nil {
		_ = c.nc.SetReadDeadline(time.Now().Add(wait))
		_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, 1<<20))
	}
	c.close()
}
