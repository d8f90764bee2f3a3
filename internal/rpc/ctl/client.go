package ctl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// ClientStream is the executor's end of its control stream.
type ClientStream struct{ c *conn }

// Dial connects to the driver at addr, runs the handshake auth asks for and
// returns the stream, ready for the Register message. ctx bounds the
// connection and the handshake only; without a secret to prove, the
// driver's hello is read with its first answer (see the package's wire),
// so the caller bounds that Recv. A TLS handshake refused by either side
// is recorded for auth.Refused(addr); a driver that refuses this client's
// secret, or its lack of TLS, answers with an Unauthenticated status (from
// Dial, or from the first Recv).
func Dial(ctx context.Context, addr string, auth rpc.Auth, opts Options) (*ClientStream, error) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.HandshakeTimeout)
	defer cancel()
	d := net.Dialer{KeepAliveConfig: KeepAlive}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "connecting to %s: %v", addr, err)
	}
	nc, err := auth.ClientHandshake(ctx, addr, raw)
	if err != nil {
		_ = raw.Close()
		return nil, status.Errorf(codes.Unavailable, "TLS handshake with %s: %v", addr, err)
	}
	return newClient(ctx, addr, nc, auth, opts)
}

// NewClient runs the protocol over nc, a connection the caller opened (and
// secured, or not): the preamble, and the proof of auth's secret if the
// server asks for one. ctx bounds the handshake.
func NewClient(ctx context.Context, nc net.Conn, auth rpc.Auth, opts Options) (*ClientStream, error) {
	return newClient(ctx, nc.RemoteAddr().String(), nc, auth, opts.withDefaults())
}

func newClient(ctx context.Context, addr string, nc net.Conn, auth rpc.Auth, opts Options) (*ClientStream, error) {
	c := newConn(nc, opts)
	if auth.TLSEnabled() {
		// Nothing from the server is taken before its hello proved the
		// driver's key on this connection (rpc.Auth.ChannelProof).
		c.checkHello = func(proof []byte) error { return auth.CheckChannelProof(addr, nc, proof) }
	}
	deadline := time.Now().Add(opts.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = nc.SetDeadline(deadline)
	// A cancelled ctx ends a read or write in progress at once.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	s, err := handshake(c, auth)
	if !stop() || err != nil {
		c.close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return s, nil
}

func handshake(c *conn, auth rpc.Auth) (*ClientStream, error) {
	if auth.TLSEnabled() || auth.Secret == "" {
		// No proof to send (TLS authenticated both sides, or there is no
		// secret): the preamble goes with the first message and the
		// hello is read before the first answer, which saves a round
		// trip per connection, and the driver a wake-up.
		c.unsent = []byte(preamble)
		c.hello = true
		return &ClientStream{c: c}, nil
	}
	if err := c.write([]byte(preamble), nil); err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	nonce, err := c.readHelloNonce()
	if err != nil {
		return nil, err
	}
	if len(nonce) > 0 {
		if err := c.write(controlFrame(kindProof, auth.Proof(nonce)), nil); err != nil {
			return nil, status.Error(codes.Unavailable, err.Error())
		}
	}
	return &ClientStream{c: c}, nil
}

// readHelloNonce reads the server's hello and returns the nonce to prove
// (a copy: at most 32 bytes): a server that refused the client answered
// with an error frame instead. The frame is at most
// MaxFrameBeforeRegister bytes: a peer posing as the driver (one that
// proves nothing, as without TLS) is not read further.
func (c *conn) readHelloNonce() ([]byte, error) {
	limit := c.maxRecv
	c.maxRecv = min(limit, MaxFrameBeforeRegister)
	control, p, err := c.next()
	c.maxRecv = limit
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "waiting for the driver's hello: %v", err)
	}
	defer c.release()
	switch {
	case !control || len(p) == 0:
		return nil, status.Errorf(codes.Unavailable, "%s does not speak drover's control protocol", c.nc.RemoteAddr())
	case p[0] == kindError:
		return nil, controlError(p)
	case p[0] != kindHello:
		return nil, status.Errorf(codes.Unavailable, "%s does not speak drover's control protocol (control frame %d)", c.nc.RemoteAddr(), p[0])
	}
	if c.checkHello != nil {
		if err := c.checkHello(p[1:]); err != nil {
			return nil, status.Error(codes.Unauthenticated, err.Error())
		}
	}
	return bytes.Clone(p[1:]), nil
}

// readHello reads a pipelined client's hello, sending its preamble first
// if no message went out yet. A nonce in it is not answered: a client
// without the secret sends no proof, and the server then answers the
// first message with Unauthenticated.
func (c *conn) readHello() error {
	if err := c.write(nil, nil); err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	_, err := c.readHelloNonce()
	return err
}

// Send writes m to the driver. Concurrent calls take turns.
func (s *ClientStream) Send(m *pb.ExecutorMessage) error { return s.c.send(m) }

// Recv returns the driver's next message: io.EOF once the driver ended the
// stream, its status if it ended it with an error.
func (s *ClientStream) Recv() (*pb.DriverMessage, error) {
	m := new(pb.DriverMessage)
	if err := s.c.recv(m); err != nil {
		return nil, err
	}
	return m, nil
}

// CloseSend tells the driver this side sends nothing more; Recv goes on
// until the driver ends the stream.
func (s *ClientStream) CloseSend() error {
	if err := s.c.write(controlFrame(kindEnd, nil), errEnded); err != nil {
		return fmt.Errorf("ctl: ending the stream: %w", err)
	}
	return nil
}

// Close closes the connection: a Recv in progress returns an error.
func (s *ClientStream) Close() error {
	s.c.close()
	return nil
}

// Context ends when the connection closes.
func (s *ClientStream) Context() context.Context { return s.c.context() }

var _ io.Closer = (*ClientStream)(nil)
