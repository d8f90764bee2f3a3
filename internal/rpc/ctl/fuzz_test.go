package ctl

import (
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// meteredConn reads b in chunks of chunk bytes, then times out as a
// stalled socket does, or ends; it counts what it handed out and discards
// what is written.
type meteredConn struct {
	fakeWriter
	b     []byte
	chunk int
	read  int
	stall bool
}

func (c *meteredConn) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		if c.stall {
			return 0, os.ErrDeadlineExceeded
		}
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.b)
	c.b = c.b[n:]
	c.read += n
	return n, nil
}

func (c *meteredConn) Write(p []byte) (int, error) { return len(p), nil }

// fuzzInput splits a fuzz input: its first byte picks the chunk size and
// the ending, the rest is what the peer sends.
func fuzzInput(in []byte) *meteredConn {
	if len(in) == 0 {
		return &meteredConn{chunk: 1}
	}
	return &meteredConn{b: in[1:], chunk: 1 + int(in[0]&0x7f)*37, stall: in[0]&0x80 != 0}
}

// FuzzReadFrames: any bytes read as frames, split however, give frames
// within the limit, each message decoded or an error, never a panic; and
// the read buffer never outgrows a pooled buffer or twice what arrived,
// whatever the headers declare.
func FuzzReadFrames(f *testing.F) {
	f.Add(append([]byte{3}, frame(heartbeat(1, 10))...), uint32(0))
	f.Add(append([]byte{0x80}, binary.AppendUvarint(nil, (200<<20)<<1)...), uint32(0))
	f.Add(append([]byte{0}, binary.AppendUvarint(nil, (1<<20)<<1)...), uint32(1000))
	f.Add(append([]byte{5}, controlFrame(kindError, append([]byte{5}, "nope"...))...), uint32(0))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint32(0))
	f.Fuzz(func(t *testing.T, in []byte, limit uint32) {
		nc := fuzzInput(in)
		opts := Options{MaxFrame: int(limit % (rpc.MaxMessageSize + 1))}.withDefaults()
		c := newConn(nc, opts)
		for {
			control, p, err := c.next()
			if len(c.buf) > max(pooledSize, 2*nc.read) {
				t.Fatalf("%d bytes read: a %d-byte buffer", nc.read, len(c.buf))
			}
			if err != nil {
				return
			}
			if len(p) > opts.MaxFrame {
				t.Fatalf("a frame of %d bytes, over the %d-byte limit", len(p), opts.MaxFrame)
			}
			// What recvFrame does with a frame.
			if control {
				_ = controlError(p)
			} else {
				_ = proto.Unmarshal(p, new(pb.ExecutorMessage))
			}
			c.release()
		}
	})
}

// FuzzServerConn: any bytes a peer sends a server, with or without a
// secret to prove, end in a refusal or in messages, never a panic; until
// the first message the server reads no frame over MaxFrameBeforeRegister
// and holds no buffer larger than a pooled one or twice what arrived.
func FuzzServerConn(f *testing.F) {
	reg := frame(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: &pb.Register{AppId: app, ExecutorId: "1"}}})
	f.Add(append([]byte{7}, append([]byte(preamble), reg...)...), false)
	f.Add(append([]byte{0x80}, binary.AppendUvarint([]byte(preamble), (200<<20)<<1)...), false)
	f.Add(append([]byte{1}, append([]byte(preamble), controlFrame(kindProof, make([]byte, rpc.ProofSize))...)...), true)
	f.Add(append([]byte{0}, "GET / HTTP/1.1\r\n\r\n"...), false)
	quiet := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, in []byte, secret bool) {
		auth := rpc.Auth{}
		if secret {
			auth = rpc.Auth{AppID: app, Secret: "s"}
		}
		s := NewServer(auth, Options{}, quiet, nil)
		defer s.workers.stop()
		nc := fuzzInput(in)
		c := newConn(nc, s.opts)
		c.maxRecv = min(MaxFrameBeforeRegister, s.opts.MaxFrame)
		c.pre = &preRegister{srv: s, peer: peerOf(nc.RemoteAddr())}
		c.workers = &s.workers
		stream, ok := s.handshake(c)
		if !ok {
			return
		}
		for {
			registered := c.pre == nil
			_, err := stream.Recv()
			if !registered && len(c.buf) > max(pooledSize, 2*nc.read) {
				t.Fatalf("before registration, %d bytes read: a %d-byte buffer", nc.read, len(c.buf))
			}
			if err != nil {
				return
			}
			if c.maxRecv != s.opts.MaxFrame || c.pre != nil {
				t.Fatalf("registered, frames are limited to %d bytes, not MaxFrame", c.maxRecv)
			}
		}
	})
}
