package ctl

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
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
	// MaxFrame is the largest frame read or written (rpc.MaxMessageSize
	// when 0).
	MaxFrame int
	// ReadBuffer is the size of the connection's read buffer (512 bytes on
	// a server, which holds one connection per executor, 4 KiB on a
	// client). Larger frames are read into a pooled or, past 64 KiB, a
	// fresh buffer that is dropped after the message is decoded.
	ReadBuffer int
}

func (o Options) withDefaults(readBuffer int) Options {
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 2 * time.Minute
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 20 * time.Second
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = rpc.MaxMessageSize
	}
	if o.ReadBuffer <= 0 {
		o.ReadBuffer = readBuffer
	}
	return o
}

// pooledSize is the size of the pooled buffers frames too large for the
// read buffer are read into, and the largest write buffer kept for reuse.
const pooledSize = 64 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, pooledSize); return &b }}

// conn is one framed connection. One goroutine at a time reads (recv);
// any number write (send), one at a time under wmu.
type conn struct {
	nc   net.Conn
	r    *bufio.Reader
	opts Options

	// Reader's state. rerr is sticky: once the stream ended or broke,
	// every later recv returns it.
	rerr    error
	discard int     // bytes of the last frame still in r
	big     *[]byte // the last frame's pooled buffer, if any

	wmu  sync.Mutex
	werr error // sticky: the stream was ended or a write failed

	mu     sync.Mutex
	closed bool
	ctx    context.Context // made on demand (Context)
	cancel context.CancelFunc
}

func newConn(nc net.Conn, opts Options) *conn {
	return &conn{nc: nc, opts: opts}
}

// startReading gives c its read buffer, once the connection that frames
// are read from (the TLS one, with TLS) is known.
func (c *conn) startReading() { c.r = bufio.NewReaderSize(c.nc, c.opts.ReadBuffer) }

// errFrameTooLarge is the status of a frame over MaxFrame.
func errFrameTooLarge(n uint64, limit int) error {
	return status.Errorf(codes.ResourceExhausted, "ctl: a frame of %d bytes is over the %d-byte limit", n, limit)
}

// next reads the next frame and returns its payload, valid until release.
func (c *conn) next() (control bool, payload []byte, err error) {
	h, err := binary.ReadUvarint(c.r)
	if err != nil {
		return false, nil, c.readErr(err)
	}
	n, control := h>>1, h&1 == 1
	if n > uint64(c.opts.MaxFrame) {
		return false, nil, errFrameTooLarge(n, c.opts.MaxFrame)
	}
	if int(n) <= c.r.Size() {
		p, err := c.r.Peek(int(n))
		if err != nil {
			return false, nil, c.readErr(err)
		}
		c.discard = int(n)
		return control, p, nil
	}
	var p []byte
	if n <= pooledSize {
		c.big = bufPool.Get().(*[]byte)
		p = (*c.big)[:n]
	} else {
		p = make([]byte, n)
	}
	if _, err := io.ReadFull(c.r, p); err != nil {
		c.release()
		return false, nil, c.readErr(err)
	}
	return control, p, nil
}

// release gives back what next's payload used.
func (c *conn) release() {
	if c.discard > 0 {
		_, _ = c.r.Discard(c.discard)
		c.discard = 0
	}
	if c.big != nil {
		bufPool.Put(c.big)
		c.big = nil
	}
}

// readErr describes a failed read. A connection that ends, even between
// frames, without the peer's end frame is not a clean end of the stream:
// io.EOF is kept for that.
func (c *conn) readErr(err error) error {
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
	err := c.recvFrame(m)
	if err != nil {
		c.rerr = err
		if !errors.Is(err, io.EOF) {
			c.close()
		}
	}
	return err
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
