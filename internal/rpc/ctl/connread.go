package ctl

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

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
