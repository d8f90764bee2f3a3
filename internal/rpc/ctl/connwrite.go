package ctl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

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
