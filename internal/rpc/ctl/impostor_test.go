package ctl

import (
	"crypto/tls"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// TestExecutorTakesTasksOnlyFromTheDriversKey: a holder of the executors'
// Secret that takes over the driver's address can serve the TLS session
// the driver prepared, and so show executors the driver's certificate
// (mtls/resume.go); it does not hold the driver's key. An executor
// resuming that session refuses such a server before it takes any message
// from it: Unauthenticated, recorded for Refused(addr), as executors stop
// on (they do not retry). The real driver, on the same session, is
// accepted.
func TestExecutorTakesTasksOnlyFromTheDriversKey(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	ca, err := mtls.NewAuthority(app, time.Now())
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
	driver := rpc.Auth{}.WithLoaded(load(mtls.RoleDriver), quiet)
	withSession, err := driver.PrepareSession(t.Context(), load(mtls.RoleExecutor), nil)
	if err != nil {
		t.Fatal(err)
	}
	// What the impostor holds: another executor's copy of the bundle,
	// session included, which it serves.
	stolen, err := withSession.Bundle().Load()
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(withSession.Bundle().SessionPEM)
	state, err := tls.ParseSessionState(block.Bytes[1+block.Bytes[0]:])
	if err != nil {
		t.Fatal(err)
	}
	impostor := stolen.ServerConfig(nil)
	impostor.UnwrapSession = func([]byte, tls.ConnectionState) (*tls.SessionState, error) { return state, nil }

	// register is an executor's registration at addr: the launch the
	// server answers with, and whether the connection resumed.
	register := func(t *testing.T, addr string, executor rpc.Auth) (*pb.DriverMessage, bool, error) {
		c, err := Dial(t.Context(), addr, executor, Options{})
		if err != nil {
			return nil, false, err
		}
		defer c.Close()
		resumed := c.c.nc.(*tls.Conn).ConnectionState().DidResume
		if err := c.Send(heartbeat(1, 1)); err != nil {
			return nil, resumed, err
		}
		m, err := c.Recv()
		return m, resumed, err
	}

	t.Run("the driver", func(t *testing.T) {
		_, addr := serve(t, driver, Options{}, quiet, echo)
		executor := rpc.Auth{}.WithLoaded(withSession, quiet)
		got, resumed, err := register(t, addr, executor)
		if err != nil || !resumed || !proto.Equal(got, launch(1, 1)) {
			t.Errorf("got %v, resumed %v, %v; want the driver's answer on a resumed connection", got, resumed, err)
		}
	})
	for _, tc := range []struct {
		name string
		// proof is what the impostor's hello carries.
		proof func(cs tls.ConnectionState) []byte
		want  string
	}{
		// As a driver did before hellos carried a proof.
		{"no proof", func(tls.ConnectionState) []byte { return nil }, "it sent no proof of its key"},
		{"signed with the executors' key", func(cs tls.ConnectionState) []byte {
			sig, err := stolen.SignChannel(cs)
			if err != nil {
				t.Error(err)
			}
			return sig
		}, "its proof was not made with its certificate's key"},
	} {
		t.Run("an executor serving the driver's session, "+tc.name, func(t *testing.T) {
			addr := serveImpostor(t, impostor, tc.proof)
			var log logtest.Buffer
			executor := rpc.Auth{}.WithLoaded(withSession, logger(&log))
			got, resumed, err := register(t, addr, executor)
			if !resumed {
				t.Fatalf("the connection did not resume the session (%v): the test shows nothing", err)
			}
			if got != nil {
				t.Fatalf("the executor took %v from the impostor", got)
			}
			if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want Unauthenticated: %s", err, tc.want)
			}
			if executor.Refused(addr) == nil {
				t.Errorf("Refused(%s) is nil: the executor would retry", addr)
			}
			if !strings.Contains(log.String(), rpc.RefusedMessage) {
				t.Errorf("the executor did not log the refusal:\n%s", log.String())
			}
		})
	}
}

// serveImpostor serves one control connection on a loopback port with
// cfg's TLS credentials, speaking the protocol as a driver would: its
// hello carries proof(the connection's state), and it answers the first
// message with launch(1, 1), a task. It returns the address.
func serveImpostor(t *testing.T, cfg *tls.Config, proof func(tls.ConnectionState) []byte) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = lis.Close()
		<-done
	})
	go func() {
		defer close(done)
		raw, err := lis.Accept()
		if err != nil {
			return
		}
		defer raw.Close()
		_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
		tc := tls.Server(raw, cfg)
		if tc.Handshake() != nil {
			return
		}
		if _, err := io.ReadFull(tc, make([]byte, len(preamble))); err != nil {
			return
		}
		c := newConn(tc, Options{}.withDefaults())
		c.unsent = controlFrame(kindHello, proof(tc.ConnectionState()))
		var m pb.ExecutorMessage
		if c.recvFrame(&m) == nil {
			_ = c.send(launch(1, 1))
		}
		// Until the client is done.
		_, _ = tc.Read(make([]byte, 1))
	}()
	return lis.Addr().String()
}
