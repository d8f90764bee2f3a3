package rpc

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/drover-project/drover/internal/rpc/mtls"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// roleAuths are the driver's and the executors' credentials of one
// application, the executors' with the session the driver prepared, as
// master.NewSecurity makes them; fullExecutor is the executors' without it.
func roleAuths(t *testing.T) (driver, executor, fullExecutor Auth) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	ca, err := mtls.NewAuthority("drover-roles", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	load := func(role string) *mtls.Loaded {
		b, err := ca.Issue(role)
		if err != nil {
			t.Fatal(err)
		}
		l, err := b.Load()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	driver = Auth{}.WithLoaded(load(mtls.RoleDriver), quiet)
	execs := load(mtls.RoleExecutor)
	withSession, err := driver.PrepareSession(t.Context(), execs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return driver, Auth{}.WithLoaded(withSession, quiet), Auth{}.WithLoaded(execs, quiet)
}

// stubExecutor answers both RPCs with one chunk.
type stubExecutor struct{ pb.UnimplementedExecutorServer }

func (stubExecutor) FetchResult(_ *pb.FetchResultRequest, s grpc.ServerStreamingServer[pb.Chunk]) error {
	return s.Send(&pb.Chunk{Data: []byte("result")})
}

func (stubExecutor) FetchBlocks(_ *pb.FetchBlocksRequest, s grpc.ServerStreamingServer[pb.Chunk]) error {
	return s.Send(&pb.Chunk{Data: []byte("blocks")})
}

// TestEachRoleOnEachRPC tries every (caller's role × RPC) pair with mutual
// TLS, both outcomes: only the driver fetches a kept result (the fetch
// deletes it), either role fetches shuffle blocks, only executors open the
// control stream at the driver, and executors take the control stream,
// and so tasks, only from a server with the driver's certificate.
func TestEachRoleOnEachRPC(t *testing.T) {
	driver, executor, fullExecutor := roleAuths(t)
	// An executor's server (result and block fetches).
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(ServerOptions(executor)...)
	pb.RegisterExecutorServer(srv, stubExecutor{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	call := func(caller Auth, rpc string) error {
		conn, err := grpc.NewClient(lis.Addr().String(), DialOptions(caller)...)
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		c := pb.NewExecutorClient(conn)
		var stream grpc.ServerStreamingClient[pb.Chunk]
		if rpc == "FetchResult" {
			stream, err = c.FetchResult(ctx, &pb.FetchResultRequest{TaskId: 1})
		} else {
			stream, err = c.FetchBlocks(ctx, &pb.FetchBlocksRequest{})
		}
		if err != nil {
			return err
		}
		_, err = stream.Recv()
		return err
	}
	// handshake runs the control stream's handshakes, server's and
	// client's, and returns the first refusal.
	handshake := func(server, client Auth) error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		served := make(chan error, 1)
		go func() {
			raw, err := ln.Accept()
			if err != nil {
				served <- err
				return
			}
			defer raw.Close()
			conn, err := server.ServerHandshake(ctx, raw)
			if err == nil {
				// TLS 1.3: the client's certificate is checked after the
				// client finished; a byte each way settles both sides.
				_, err = conn.Write([]byte{1})
				if err == nil {
					_, err = conn.Read(make([]byte, 1))
				}
			}
			served <- err
		}()
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		conn, err := client.ClientHandshake(ctx, ln.Addr().String(), raw)
		if err == nil {
			_, err = conn.Write([]byte{1})
			if err == nil {
				_, err = conn.Read(make([]byte, 1))
			}
		}
		if err != nil {
			raw.Close()
		}
		return errors.Join(err, <-served)
	}
	for _, tc := range []struct {
		caller string
		what   string
		try    func() error
		want   codes.Code // for the gRPC calls; for the control stream OK or not
	}{
		{"driver", "FetchResult", func() error { return call(driver, "FetchResult") }, codes.OK},
		{"executor", "FetchResult", func() error { return call(fullExecutor, "FetchResult") }, codes.PermissionDenied},
		{"driver", "FetchBlocks", func() error { return call(driver, "FetchBlocks") }, codes.OK},
		{"executor", "FetchBlocks", func() error { return call(fullExecutor, "FetchBlocks") }, codes.OK},
		{"executor (resuming)", "the control stream at the driver", func() error { return handshake(driver, executor) }, codes.OK},
		{"executor (full handshake)", "the control stream at the driver", func() error { return handshake(driver, fullExecutor) }, codes.OK},
		{"driver", "the control stream at the driver", func() error { return handshake(driver, driver) }, codes.PermissionDenied},
		{"executor", "serving the control stream to an executor (sending tasks)", func() error { return handshake(fullExecutor, executor) }, codes.PermissionDenied},
	} {
		t.Run(tc.caller+"/"+tc.what, func(t *testing.T) {
			err := tc.try()
			switch {
			case tc.want == codes.OK && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == codes.OK:
			case err == nil:
				t.Fatal("accepted")
			case tc.what == "FetchResult" || tc.what == "FetchBlocks":
				if status.Code(err) != tc.want {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
			case !errors.Is(err, mtls.ErrRefused) && !refusal(err):
				t.Fatalf("got %v, want a refused handshake", err)
			}
		})
	}
}
