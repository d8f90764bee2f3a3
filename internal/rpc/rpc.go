package rpc

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/rpc/mtls"
	"github.com/drover-project/drover/internal/rpc/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// MaxMessageSize bounds one gRPC message. Senders keep their batches well
// below it; large payloads are streamed in chunks.
const MaxMessageSize = 256 << 20

// ChunkSize is the size of the chunks bulky payloads are streamed in.
const ChunkSize = 1 << 20

const authHeader = "drover-auth"

// Auth is how a process proves it belongs to the application, and checks
// that its peers do. The zero value is no authentication
// (spark.authenticate=false).
//
// With TLS set (the default on Kubernetes), every connection is TLS 1.3
// with certificates from the application's own authority on both ends:
// encrypted, mutually authenticated and not replayable. Without it, Secret
// is sent as an HMAC token in the clear (spark.network.crypto.enabled=false):
// it keeps out whoever cannot read the traffic, such as other users of one
// host, but a recorded request can be replayed.
type Auth struct {
	AppID  string
	Secret string
	tls    *tlsCreds
}

// tlsCreds are built once per process: handshakes reuse the parsed keys.
type tlsCreds struct {
	loaded *mtls.Loaded
	server credentials.TransportCredentials
	client credentials.TransportCredentials
	// serverTLS and clientTLS are the same configurations for connections
	// that are not gRPC's (the control transport, internal/rpc/ctl).
	serverTLS, clientTLS *tls.Config
	log                  *slog.Logger
	// refused holds, by dialled address, why its last handshake was
	// refused: gRPC reports such a failure as Unavailable, like a server
	// that is not up yet, but retrying cannot fix it.
	refused *sync.Map
}

// WithTLS returns a with mutual TLS from the bundle (this process's
// certificate and the application's authority). Every connection whose
// handshake fails, as a server or as a client, is logged to log, one line
// naming the peer and the reason: no or a foreign certificate, plaintext,
// an old TLS version, a replayed recording.
func (a Auth) WithTLS(b mtls.Bundle, log *slog.Logger) (Auth, error) {
	// One parse and check of the bundle for the four configurations.
	l, err := b.Load()
	if err != nil {
		return Auth{}, err
	}
	return a.WithLoaded(l, log), nil
}

// WithLoaded is WithTLS with a bundle already loaded.
func (a Auth) WithLoaded(l *mtls.Loaded, log *slog.Logger) Auth {
	if log == nil {
		log = slog.Default()
	}
	// Connections share serverTLS: it makes no copy per connection
	// (ServerConfig with no onRefuse). The control transport's roles are
	// fixed: its server is the driver and its clients are executors, so
	// its handshakes refuse a peer of the other role (a driver's
	// certificate dialling the driver, an executor's serving the control
	// stream, and so sending tasks). Its clients dial only the driver, so
	// they resume the session the driver prepared, if the bundle holds one
	// (PrepareSession); what the roles prove then, see mtls's resume.go.
	// gRPC connections take either role and check it per call
	// (methodRoles).
	server, client := l.ServerCredentials(nil), l.DialCredentials(nil)
	serverTLS := l.Accepting(mtls.RoleExecutor).ServerConfig(nil)
	clientTLS := l.Accepting(mtls.RoleDriver).ResumingClientConfig(nil)
	a.AppID = l.Bundle().AppID
	refused := &sync.Map{}
	a.tls = &tlsCreds{loaded: l, server: loggedCreds{server, log, nil}, client: loggedCreds{client, log, refused}, refused: refused,
		serverTLS: serverTLS, clientTLS: clientTLS, log: log}
	return a
}

// PrepareSession returns executors, the loaded bundle of this
// application's executors, with a session that their control connections
// to this process resume, skipping the certificates' half of the handshake
// (mtls.Loaded.PrepareSession, which calls expired once the session is too
// old to resume). a must be the driver's, made WithTLS.
func (a Auth) PrepareSession(ctx context.Context, executors *mtls.Loaded, expired func()) (*mtls.Loaded, error) {
	if a.tls == nil {
		return nil, errors.New("rpc: prepare session: authentication has no TLS")
	}
	return a.tls.loaded.PrepareSession(ctx, executors, expired)
}

// loggedCreds log the handshakes that fail: the refusals.
type loggedCreds struct {
	credentials.TransportCredentials
	log     *slog.Logger
	refused *sync.Map // clients: see tlsCreds
}

// RefusedMessage begins the log line of every connection refused for not
// holding the application's credentials.
const RefusedMessage = "connection refused: the peer does not hold this application's credentials"

func (c loggedCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		c.log.Warn(RefusedMessage, "peer", raw.RemoteAddr().String(), "err", err)
	}
	return conn, info, err
}

func (c loggedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	var alert tls.AlertError
	switch {
	case err == nil:
		c.refused.Delete(authority)
	case errors.Is(err, mtls.ErrRefused) || errors.As(err, &alert):
		// This side refused the server, or the server refused this side.
		c.refused.Store(authority, err)
		fallthrough
	case ctx.Err() == nil:
		c.log.Warn(RefusedMessage, "peer", raw.RemoteAddr().String(), "err", err)
	}
	return conn, info, err
}

func (c loggedCreds) Clone() credentials.TransportCredentials {
	return loggedCreds{c.TransportCredentials.Clone(), c.log, c.refused}
}

// Refused returns why the last TLS handshake with addr (as dialled) was
// refused, by either side's verification, or nil. Callers that retry an
// unavailable peer stop on it.
func (a Auth) Refused(addr string) error {
	if a.tls == nil {
		return nil
	}
	if err, ok := a.tls.refused.Load(addr); ok {
		return err.(error)
	}
	return nil
}

// TLS returns the bundle of an Auth made WithTLS.
func (a Auth) TLS() (mtls.Bundle, bool) {
	if a.tls == nil {
		return mtls.Bundle{}, false
	}
	return a.tls.loaded.Bundle(), true
}

// Enabled reports whether connections must prove the application's
// credentials.
func (a Auth) Enabled() bool { return a.Secret != "" || a.tls != nil }

// token proves knowledge of the secret without sending it: an HMAC bound to
// the application, so a token seen on one application's wire is useless for
// another.
func (a Auth) token() string {
	m := hmac.New(sha256.New, []byte(a.Secret))
	m.Write([]byte("drover-rpc/v1:" + a.AppID))
	return hex.EncodeToString(m.Sum(nil))
}

// methodRoles are the roles whose certificates may call each gRPC method:
// only the driver fetches a kept result (which the fetch deletes: an
// executor that could fetch another's would fail the driver's task), and
// executors fetch each other's shuffle blocks. A method not listed is
// refused to both.
var methodRoles = map[string][]string{
	pb.Executor_FetchResult_FullMethodName: {mtls.RoleDriver},
	pb.Executor_FetchBlocks_FullMethodName: {mtls.RoleDriver, mtls.RoleExecutor},
}

func (a Auth) check(ctx context.Context, method string) error {
	if a.tls != nil {
		// TLS authenticated the peer in the handshake; its role is
		// checked here, per call. These connections never resume a
		// session (mtls's resume.go), so the role is proven by the
		// peer's key.
		return checkRole(ctx, method)
	}
	if a.Secret == "" {
		return nil
	}
	// With a shared secret, every process holds the same credential:
	// roles cannot be told apart.
	md, _ := metadata.FromIncomingContext(ctx)
	got := md.Get(authHeader)
	if len(got) != 1 || !hmac.Equal([]byte(got[0]), []byte(a.token())) {
		return status.Error(codes.Unauthenticated, "missing or wrong application secret (spark.authenticate is on)")
	}
	return nil
}

// checkRole refuses a call of method by a peer whose certificate's role
// may not make it (methodRoles).
func checkRole(ctx context.Context, method string) error {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return status.Error(codes.PermissionDenied, "the caller's role is unknown: no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return status.Error(codes.PermissionDenied, "the caller's role is unknown: not a TLS connection")
	}
	role, err := mtls.PeerRole(info.State)
	if err != nil {
		return status.Errorf(codes.PermissionDenied, "the caller's role is unknown: %v", err)
	}
	roles, ok := methodRoles[method]
	switch {
	case !ok:
		return status.Errorf(codes.PermissionDenied, "%s is no method the application's processes may call", method)
	case !slices.Contains(roles, role):
		return status.Errorf(codes.PermissionDenied, "%s may not be called by the application's %s, only by its %s",
			method, role, strings.Join(roles, " or "))
	}
	return nil
}

// NewSecret returns a random secret for an application that enables
// authentication without setting spark.authenticate.secret.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ServerOptions returns the options of a drover gRPC server.
func ServerOptions(auth Auth) []grpc.ServerOption {
	creds := insecure.NewCredentials()
	// A driver holds a connection per executor, idle most of the time, and
	// reads on it are small (control messages, block requests; large frames
	// bypass the buffer). On plain TCP gRPC lends an idle connection's read
	// buffer back to a pool; a TLS connection buffers whole records itself,
	// so a second buffer would only hold 8 KiB per executor for nothing.
	// (Write buffers are shared between flushes: gRPC's server default.)
	readBuffer := 8 << 10
	if auth.tls != nil {
		creds = auth.tls.server
		readBuffer = 0
	}
	return []grpc.ServerOption{
		grpc.Creds(creds),
		grpc.ReadBufferSize(readBuffer),
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := auth.check(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := auth.check(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}
}

// DialOptions returns the options of a drover gRPC client.
func DialOptions(auth Auth) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if auth.tls != nil {
		creds = auth.tls.client
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 20 * time.Second, PermitWithoutStream: true}),
		// Small control messages must not wait for Nagle or large windows.
		grpc.WithInitialWindowSize(4 << 20),
		grpc.WithInitialConnWindowSize(16 << 20),
	}
	if auth.Secret != "" && auth.tls == nil {
		opts = append(opts, grpc.WithPerRPCCredentials(tokenCreds(auth.token())))
	}
	return opts
}

type tokenCreds string

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{authHeader: string(t)}, nil
}

func (tokenCreds) RequireTransportSecurity() bool { return false }
