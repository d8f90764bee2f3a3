package ctl

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/drover-project/drover/internal/rpc"
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

// errFrameTooLarge is the status of a frame over MaxFrame.
func errFrameTooLarge(n uint64, limit int) error {
	return status.Errorf(codes.ResourceExhausted, "ctl: a frame of %d bytes is over the %d-byte limit", n, limit)
}

// fill reads until buf[r:w] holds at least n bytes, moving them to a
// larger buffer first if they could not fit. A frame over pooledSize is
// read into a buffer that grows with the data received, to twice what
// arrived at most: its header's claim sizes no allocation, so a peer that
// declares 256 MiB and sends 10 bytes costs a pooled buffer, not 256 MiB.
// Such a buffer never extends past the frame: the frame is consumed whole
// and the buffer dropped.
func (c *conn) fill(n int) error {
	for c.w-c.r < n {
		if c.r+n > len(c.buf) && (n <= pooledSize || c.w == len(c.buf)) {
			c.grow(n)
		}
		k, err := io.ReadAtLeast(c.nc, c.buf[c.w:], min(c.r+n, len(c.buf))-c.w)
		c.w += k
		if err != nil {
			return err
		}
	}
	return nil
}

// grow moves buf[r:w] to the front of a buffer with room for more of the
// n bytes wanted: all of them up to pooledSize (tiny, then a pooled
// buffer), and past it twice what is buffered, at most n.
func (c *conn) grow(n int) {
	size := n
	if n > pooledSize {
		size = min(n, max(pooledSize, 2*(c.w-c.r)))
	}
	to := c.buf // room enough once moved to the front
	switch {
	case size <= len(c.buf):
	case size <= pooledSize:
		// Only tiny is smaller than a pooled buffer.
		c.pooled = bufPool.Get().(*[]byte)
		to = (*c.pooled)[:pooledSize]
	default:
		to = make([]byte, size)
	}
	m := copy(to, c.buf[c.r:c.w])
	if c.pooled != nil && len(to) > pooledSize {
		c.putPooled()
	}
	c.buf, c.r, c.w = to, 0, m
}

// putPooled gives the pooled buffer back.
func (c *conn) putPooled() {
	bufPool.Put(c.pooled)
	c.pooled = nil
}

// errBadHeader is the error of a frame header that is no uvarint.
var errBadHeader = status.Error(codes.Internal, "ctl: malformed frame header")

// next reads the next frame and returns its payload, valid until release.
// A read that fails with a timeout leaves what it read buffered, so that
// the next call resumes the frame.
func (c *conn) next() (control bool, payload []byte, err error) {
	var h uint64
	var k int
	for need := 1; ; {
		if err := c.fill(need); err != nil {
			return false, nil, c.readErr(err)
		}
		if h, k = binary.Uvarint(c.buf[c.r:c.w]); k > 0 {
			break
		}
		if k < 0 || c.w-c.r >= binary.MaxVarintLen64 {
			return false, nil, errBadHeader
		}
		need = c.w - c.r + 1
	}
	n, control := h>>1, h&1 == 1
	if n > uint64(c.maxRecv) {
		return false, nil, errFrameTooLarge(n, c.maxRecv)
	}
	if err := c.fill(k + int(n)); err != nil {
		return false, nil, c.readErr(err)
	}
	c.discard = k + int(n)
	return control, c.buf[c.r+k : c.r+k+int(n)], nil
}

// release consumes what next returned. Once what was read fits tiny
// again, a larger buffer is given back or dropped.
func (c *conn) release() {
	c.r += c.discard
	c.discard = 0
	if len(c.buf) > tinySize && c.w-c.r <= tinySize {
		m := copy(c.tiny[:], c.buf[c.r:c.w])
		if c.pooled != nil {
			c.putPooled()
		}
		c.buf, c.r, c.w = c.tiny[:], 0, m
	}
}

// readErr describes a failed read. A connection that ends, even between
// frames, without the peer's end frame is not a clean end of the stream:
// io.EOF is kept for that.
func (c *conn) readErr(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// recvShallow's look at what is buffered, which found no whole
		// frame: no need to say more.
		return err
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("ctl: reading from %s: %w", c.nc.RemoteAddr(), err)
}

// recv reads the next message into m. It returns io.EOF once the peer ended
// the stream, the peer's status for an error frame, and any other error
// once the connection broke; the connection is closed on the latter.
func (c *conn) recv(m proto.Message) error {
	if c.rerr != nil {
		return c.rerr
	}
	var err error
	switch {
	case c.hello:
		c.hello = false
		if err = c.readHello(); err == nil {
			err = c.recvFrame(m)
		}
	case c.raw != nil:
		err = c.recvShallow(m)
	default:
		err = c.recvFrame(m)
	}
	if err != nil {
		c.rerr = err
		if !errors.Is(err, io.EOF) {
			c.close()
		}
	}
	return err
}

// recvShallow is recvFrame for a driver's connection, whose goroutine
// waits for the executor's next message most of its life. A goroutine's
// stack grows to what its deepest call needed and never shrinks back below
// 4 KiB, and reading a TLS record and decoding a message need more than a
// new goroutine's 2 KiB: so they run on the server's workers, and this
// goroutine waits for the socket to be readable without reading it. First,
// what is already buffered, here or inside TLS, is read without waiting (a
// read deadline in the past reads nothing from the socket); only when that
// is not a whole frame does it wait.
func (c *conn) recvShallow(m proto.Message) error {
	var err error
	c.workers.do(func() {
		_ = c.nc.SetReadDeadline(time.Unix(1, 0))
		err = c.recvFrame(m)
		_ = c.nc.SetReadDeadline(c.readDeadline())
	})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	err = nil // not kept while waiting, maybe for minutes
	if err := waitReadable(c.raw); err != nil {
		return c.readErr(err)
	}
	c.workers.do(func() { err = c.recvFrame(m) })
	return err
}

// rawConn is nc's socket, if recvShallow can wait on it.
func rawConn(nc net.Conn) syscall.RawConn {
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok || !canWaitReadable {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

func (c *conn) recvFrame(m proto.Message) error {
	control, p, err := c.next()
	if err != nil {
		return err
	}
	defer c.release()
	if !control {
		if err := proto.Unmarshal(p, m); err != nil {
			return status.Errorf(codes.Internal, "ctl: decoding a message from %s: %v", c.nc.RemoteAddr(), err)
		}
		return nil
	}
	return controlError(p)
}

// controlError is what a control frame met in the message stream means.
func controlError(p []byte) error {
	if len(p) == 0 {
		return status.Error(codes.Internal, "ctl: empty control frame")
	}
	switch p[0] {
	case kindEnd:
		return io.EOF
	case kindError:
		code, n := binary.Uvarint(p[1:])
		if n <= 0 {
			return status.Error(codes.Internal, "ctl: malformed error frame")
		}
		return status.Error(codes.Code(code), string(p[1+n:]))
	default:
		return status.Errorf(codes.Internal, "ctl: unexpected control frame %d", p[0])
	}
}

// send writes m as one frame. A message over MaxFrame is refused without
// writing (ResourceExhausted); the stream stays usable.
func (c *conn) send(m proto.Message) error {
	size := proto.Size(m)
	if size > c.opts.MaxFrame {
		return status.Errorf(codes.ResourceExhausted, "ctl: a message of %d bytes is over the %d-byte limit", size, c.opts.MaxFrame)
	}
	bp := bufPool.Get().(*[]byte)
	b := binary.AppendUvarint((*bp)[:0], uint64(size)<<1)
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
	if err == nil {
		err = c.write(b, nil)
	} else {
		err = status.Errorf(codes.Internal, "ctl: encoding a message: %v", err)
	}
	// A buffer grown for a large message is dropped, not kept.
	if cap(b) <= pooledSize {
		*bp = b[:0]
		bufPool.Put(bp)
	}
	return err
}

// controlFrame encodes a control frame of kind with body.
func controlFrame(kind byte, body []byte) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 12+len(body)), uint64(1+len(body))<<1|1)
	b = append(b, kind)
	return append(b, body...)
}

// errorFrame encodes err as an error frame: its gRPC status, Unknown if
// it has none.
func errorFrame(err error) []byte {
	st := status.Convert(err)
	body := binary.AppendUvarint(nil, uint64(st.Code()))
	return controlFrame(kindError, append(body, st.Message()...))
}

// errEnded is the write error once this side ended the stream.
var errEnded = errors.New("ctl: the stream was ended")

// write writes b under the write lock with the write deadline. A failed
// write closes the connection: the peer is gone or stuck, and the reader
// must learn it too. ending, if not nil, becomes the sticky write error
// after b was written (an end or error frame).
func (c *conn) write(b []byte, ending error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if c.unsent != nil {
		b = append(c.unsent, b...)
		c.unsent = nil
	}
	if len(b) == 0 {
		c.werr = ending
		return nil
	}
	// Real time: the deadline is the socket's.
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout))
	_, err := c.nc.Write(b)
	if err != nil {
		c.werr = fmt.Errorf("ctl: writing to %s: %w", c.nc.RemoteAddr(), err)
		c.close()
		return c.werr
	}
	// Cleared, so that no runtime timer stays armed per idle connection.
	_ = c.nc.SetWriteDeadline(time.Time{})
	c.werr = ending
	return nil
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
