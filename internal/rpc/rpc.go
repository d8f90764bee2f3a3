package rpc

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// MaxMessageSize bounds one gRPC message. Senders keep their batches well
// below it; large payloads are streamed in chunks.
const MaxMessageSize = 256 << 20

// ChunkSize is the size of the chunks bulky payloads are streamed in.
const ChunkSize = 1 << 20

const authHeader = "drover-auth"

// Auth is the application's shared secret. The zero value disables
// authentication (spark.authenticate=false).
type Auth struct {
	AppID  string
	Secret string
}

// Enabled reports whether connections must prove the secret.
func (a Auth) Enabled() bool { return a.Secret != "" }

// token proves knowledge of the secret without sending it: an HMAC bound to
// the application, so a token seen on one application's wire is useless for
// another.
func (a Auth) token() string {
	m := hmac.New(sha256.New, []byte(a.Secret))
	m.Write([]byte("drover-rpc/v1:" + a.AppID))
	return hex.EncodeToString(m.Sum(nil))
}

func (a Auth) check(ctx context.Context) error {
	if !a.Enabled() {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	got := md.Get(authHeader)
	if len(got) != 1 || !hmac.Equal([]byte(got[0]), []byte(a.token())) {
		return status.Error(codes.Unauthenticated, "missing or wrong application secret (spark.authenticate is on)")
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
	return []grpc.ServerOption{
		// A driver holds a connection per executor, idle most of the time,
		// and reads on it are small (control messages, block requests;
		// large frames bypass the buffer): a small read buffer keeps each
		// connection cheap while it waits. (Write buffers are pooled by
		// gRPC between flushes.)
		grpc.ReadBufferSize(8 << 10),
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := auth.check(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := auth.check(ss.Context()); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}
}

// DialOptions returns the options of a drover gRPC client.
func DialOptions(auth Auth) []grpc.DialOption {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 20 * time.Second, PermitWithoutStream: true}),
		// Small control messages must not wait for Nagle or large windows.
		grpc.WithInitialWindowSize(4 << 20),
		grpc.WithInitialConnWindowSize(16 << 20),
	}
	if auth.Enabled() {
		opts = append(opts, grpc.WithPerRPCCredentials(tokenCreds(auth.token())))
	}
	return opts
}

type tokenCreds string

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{authHeader: string(t)}, nil
}

func (tokenCreds) RequireTransportSecurity() bool { return false }
