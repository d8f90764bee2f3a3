package rpc

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"net"

	"github.com/drover-project/drover/internal/rpc/mtls"
)

// The handshakes of connections that are not gRPC's: the driver↔executor
// control transport (internal/rpc/ctl) runs them on a raw TCP connection
// before its own framing, with the same credentials, refusal logging and
// Refused bookkeeping as the gRPC connections. With TLS the transport's
// roles are checked in the handshake: its server is the driver, which
// accepts only executors' certificates, and its clients are executors,
// which accept only the driver's, and, since a resumed handshake proves
// only the session's secret, only once the driver's hello proved its key
// on the connection (ChannelProof): so they take tasks only from it.

// TLSEnabled reports whether connections are mutual TLS (WithTLS).
func (a Auth) TLSEnabled() bool { return a.tls != nil }

// TokenRequired reports whether peers must prove the secret after
// connecting: authentication is on without TLS.
func (a Auth) TokenRequired() bool { return a.Secret != "" && a.tls == nil }

// ServerHandshake runs the server side of the TLS handshake on raw when a
// has TLS, and returns raw itself otherwise; the client must hold the
// executors' certificate (a is the driver's). A refused handshake is logged
// (RefusedMessage, naming the peer). When the peer did not start a TLS
// handshake at all, the error is a *tls.RecordHeaderError whose Conn is
// raw, so the caller may answer it in plaintext.
func (a Auth) ServerHandshake(ctx context.Context, raw net.Conn) (net.Conn, error) {
	if a.tls == nil {
		return raw, nil
	}
	conn := tls.Server(raw, a.tls.serverTLS)
	if err := conn.HandshakeContext(ctx); err != nil {
		a.tls.log.Warn(RefusedMessage, "peer", raw.RemoteAddr().String(), "err", err)
		return nil, err
	}
	return conn, nil
}

// ClientHandshake runs the client side of the TLS handshake on raw, a
// connection to addr, when a has TLS, and returns raw itself otherwise;
// the server must hold the driver's certificate (a is an executor's). A
// handshake refused by either side is logged and recorded for Refused(addr);
// a successful one clears that record.
func (a Auth) ClientHandshake(ctx context.Context, addr string, raw net.Conn) (net.Conn, error) {
	if a.tls == nil {
		return raw, nil
	}
	conn := tls.Client(raw, a.tls.clientTLS)
	err := conn.HandshakeContext(ctx)
	switch {
	case err == nil:
		a.tls.refused.Delete(addr)
		return conn, nil
	case refusal(err):
		a.tls.refused.Store(addr, err)
		fallthrough
	case ctx.Err() == nil:
		a.tls.log.Warn(RefusedMessage, "peer", raw.RemoteAddr().String(), "err", err)
	}
	return nil, err
}

// refusal reports whether a client handshake failed because one side
// refused the other: this side's verification refused the server, or the
// server answered with a TLS alert (it refused this side's certificate, or
// does not take TLS at all).
func refusal(err error) bool {
	var alert tls.AlertError
	var op *net.OpError
	return errors.Is(err, mtls.ErrRefused) || errors.As(err, &alert) || (errors.As(err, &op) && op.Op == "remote error")
}

// ProofSize is the size of a Proof.
const ProofSize = sha256.Size

// Proof proves knowledge of the secret for one connection without sending
// it: an HMAC of the server's fresh nonce bound to the application, so a
// proof seen on the wire is useless on another connection or for another
// application.
func (a Auth) Proof(nonce []byte) []byte {
	m := hmac.New(sha256.New, []byte(a.Secret))
	m.Write([]byte("drover-ctl/v1:" + a.AppID + ":"))
	m.Write(nonce)
	return m.Sum(nil)
}

// CheckProof reports whether proof is Proof(nonce) for a's secret.
func (a Auth) CheckProof(nonce, proof []byte) error {
	if !hmac.Equal(proof, a.Proof(nonce)) {
		return errors.New("missing or wrong application secret (spark.authenticate is on)")
	}
	return nil
}

// ChannelProof is the driver's proof of its key on the TLS connection nc
// that ServerHandshake returned (mtls.Loaded.SignChannel), for its hello:
// an executor that resumed the prepared session learns from it that the
// server is the driver, not another holder of the executors' Secret. Nil
// without TLS.
func (a Auth) ChannelProof(nc net.Conn) ([]byte, error) {
	if a.tls == nil {
		return nil, nil
	}
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return nil, errors.New("rpc: channel proof: not a TLS connection")
	}
	return a.tls.loaded.SignChannel(tc.ConnectionState())
}

// CheckChannelProof checks the driver's ChannelProof on the TLS connection
// nc that ClientHandshake returned to addr; a refusal is logged and
// recorded for Refused(addr), as a handshake's: retrying cannot fix it.
// Nil without TLS.
func (a Auth) CheckChannelProof(addr string, nc net.Conn, proof []byte) error {
	if a.tls == nil {
		return nil
	}
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return errors.New("rpc: channel proof: not a TLS connection")
	}
	if err := a.tls.loaded.CheckChannel(tc.ConnectionState(), proof, mtls.RoleDriver); err != nil {
		a.tls.refused.Store(addr, err)
		a.tls.log.Warn(RefusedMessage, "peer", nc.RemoteAddr().String(), "err", err)
		return err
	}
	return nil
}
