package ctl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// TestMain fails the package's tests if a goroutine they started outlives
// them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const app = "drover-ctl-test"

// logger writes text lines to b.
func logger(b *logtest.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// tlsPair is a driver's and an executor's TLS credentials from one new
// authority for appID, logging to log.
func tlsPair(t *testing.T, appID string, driverLog, executorLog *slog.Logger) (driver, executor rpc.Auth) {
	t.Helper()
	ca, err := mtls.NewAuthority(appID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for role, a := range map[string]*rpc.Auth{mtls.RoleDriver: &driver, mtls.RoleExecutor: &executor} {
		b, err := ca.Issue(role)
		if err != nil {
			t.Fatal(err)
		}
		log := driverLog
		if role == mtls.RoleExecutor {
			log = executorLog
		}
		if *a, err = (rpc.Auth{}).WithTLS(b, log); err != nil {
			t.Fatal(err)
		}
	}
	return driver, executor
}

// serve runs a server with handler on a loopback port until the test ends.
func serve(t *testing.T, auth rpc.Auth, opts Options, log *slog.Logger, handler Handler) (*Server, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, lis, auth, opts, log, handler), lis.Addr().String()
}

// serveOn runs a server with handler on lis until the test ends.
func serveOn(tb testing.TB, lis net.Listener, auth rpc.Auth, opts Options, log *slog.Logger, handler Handler) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := NewServer(auth, opts, log, handler)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	tb.Cleanup(func() { s.Stop(); <-done })
	return s
}

func dial(t *testing.T, addr string, auth rpc.Auth, opts Options) *ClientStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := Dial(ctx, addr, auth, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func heartbeat(id int64, ids int) *pb.ExecutorMessage {
	running := make([]int64, ids)
	for i := range running {
		running[i] = id<<20 | int64(i)
	}
	return &pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Heartbeat{Heartbeat: &pb.Heartbeat{UnixNano: id, RunningTaskIds: running}}}
}

func launch(id int64, payload int) *pb.DriverMessage {
	p := make([]byte, payload)
	for i := range p {
		p[i] = byte(int(id) + i)
	}
	return &pb.DriverMessage{Msg: &pb.DriverMessage_Launch{Launch: &pb.LaunchBatch{Tasks: []*pb.TaskDescription{{TaskId: id, Payload: p}}}}}
}

// echo answers each heartbeat with a launch whose payload is as large as
// the heartbeat's task ids, until the client ends the stream.
func echo(s *ServerStream) error {
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		hb := m.GetHeartbeat()
		if err := s.Send(launch(hb.GetUnixNano(), len(hb.GetRunningTaskIds()))); err != nil {
			return err
		}
	}
}

// TestRoundTrip sends messages of every size class (empty, within the read
// buffer, pooled, past the pool, megabytes) both ways in each security
// mode, then ends the stream from the client: both sides read io.EOF.
func TestRoundTrip(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	driverTLS, executorTLS := tlsPair(t, app, quiet, quiet)
	secret := rpc.Auth{AppID: app, Secret: "s3cret"}
	for name, auths := range map[string][2]rpc.Auth{
		"plain":      {{}, {}},
		"secret":     {secret, secret},
		"mutual TLS": {driverTLS, executorTLS},
	} {
		t.Run(name, func(t *testing.T) {
			_, addr := serve(t, auths[0], Options{}, nil, echo)
			c := dial(t, addr, auths[1], Options{})
			for i, n := range []int{0, 1, 60, 600, 10_000, 100_000} {
				id := int64(i + 1)
				if err := c.Send(heartbeat(id, n)); err != nil {
					t.Fatal(err)
				}
				got, err := c.Recv()
				if err != nil {
					t.Fatal(err)
				}
				// proto.Equal: cmp is slow on these sizes.
				if !proto.Equal(launch(id, n), got) {
					t.Fatalf("reply to a heartbeat of %d ids: %d payload bytes, want %d equal to what was sent",
						n, len(got.GetLaunch().GetTasks()[0].GetPayload()), n)
				}
			}
			if err := c.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("Recv after the server's handler returned: %v, want io.EOF", err)
			}
			if err := c.Send(heartbeat(1, 0)); err == nil {
				t.Error("Send after CloseSend succeeded")
			}
		})
	}
}

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{nc, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestHelloRidesWithTheFirstAnswer: a client with nothing to prove sends
// its first message with the preamble, so the server's hello goes out in
// the same write as its answer: one write in plaintext, and with mutual
// TLS one more for the handshake's flight. A client that waits for the
// hello before sending (one proving a secret) still gets it at once.
func TestHelloRidesWithTheFirstAnswer(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	driverTLS, executorTLS := tlsPair(t, app, quiet, quiet)
	for _, tc := range []struct {
		name           string
		server, client rpc.Auth
		want           int64
	}{
		{"plain", rpc.Auth{}, rpc.Auth{}, 1},
		{"mutual TLS", driverTLS, executorTLS, 2},
		// The server wants no secret: it answers the hello at once and
		// the first message in a write of its own.
		{"waiting client", rpc.Auth{}, rpc.Auth{AppID: app, Secret: "s3cret"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var writes atomic.Int64
			serveOn(t, countingListener{lis, &writes}, tc.server, Options{}, quiet, echo)
			c := dial(t, lis.Addr().String(), tc.client, Options{})
			if err := c.Send(heartbeat(7, 1)); err != nil {
				t.Fatal(err)
			}
			// A hello that never came would leave Recv waiting: closing
			// the client after a while ends it with an error instead.
			stop := time.AfterFunc(10*time.Second, func() { _ = c.Close() })
			got, err := c.Recv()
			stop.Stop()
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(launch(7, 1), got) {
				t.Fatalf("answer %v, want %v", got, launch(7, 1))
			}
			if n := writes.Load(); n != tc.want {
				t.Errorf("the server wrote %d times up to its first answer, want %d", n, tc.want)
			}
		})
	}
}

// TestHandlerErrorReachesTheClient: the handler's error is the status the
// client reads, as with a gRPC stream.
func TestHandlerErrorReachesTheClient(t *testing.T) {
	tests := map[string]struct {
		err  error
		want *status.Status
	}{
		"status":    {status.Error(codes.AlreadyExists, "executor 1 is already registered"), status.New(codes.AlreadyExists, "executor 1 is already registered")},
		"plain err": {errors.New("boom"), status.New(codes.Unknown, "boom")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, addr := serve(t, rpc.Auth{}, Options{}, nil, func(s *ServerStream) error {
				if _, err := s.Recv(); err != nil {
					return err
				}
				return tc.err
			})
			c := dial(t, addr, rpc.Auth{}, Options{})
			if err := c.Send(heartbeat(1, 1)); err != nil {
				t.Fatal(err)
			}
			_, err := c.Recv()
			if diff := cmp.Diff(tc.want.Proto(), status.Convert(err).Proto(), protocmp.Transform()); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAuthentication pairs servers and clients of every security mode:
// matching ones talk; a mismatch fails at once with a status or a refused
// handshake the client can tell from a driver that is not up, and the
// refusing side logs the refusal naming the peer.
func TestAuthentication(t *testing.T) {
	var serverLog logtest.Buffer
	quiet := slog.New(slog.DiscardHandler)
	driverTLS, executorTLS := tlsPair(t, app, logger(&serverLog), quiet)
	_, otherApp := tlsPair(t, "drover-other-app", quiet, quiet)
	secret := rpc.Auth{AppID: app, Secret: "s3cret"}
	tests := map[string]struct {
		server, client rpc.Auth
		want           codes.Code
		refused        bool // the client's Refused(addr) says why
		logged         bool // the server logged a refusal naming the client
	}{
		"plain":                         {server: rpc.Auth{}, client: rpc.Auth{}, want: codes.OK},
		"secret":                        {server: secret, client: secret, want: codes.OK},
		"secret, client without":        {server: secret, client: rpc.Auth{}, want: codes.Unauthenticated, logged: true},
		"wrong secret":                  {server: secret, client: rpc.Auth{AppID: app, Secret: "guess"}, want: codes.Unauthenticated, logged: true},
		"secret of another app's name":  {server: secret, client: rpc.Auth{AppID: "other", Secret: "s3cret"}, want: codes.Unauthenticated, logged: true},
		"client secret, server without": {server: rpc.Auth{}, client: secret, want: codes.OK},
		"mutual TLS":                    {server: driverTLS, client: executorTLS, want: codes.OK},
		"TLS server, plaintext client":  {server: driverTLS, client: rpc.Auth{}, want: codes.Unauthenticated, logged: true},
		"TLS server, secret client":     {server: driverTLS, client: secret, want: codes.Unauthenticated, logged: true},
		"plaintext server, TLS client":  {server: rpc.Auth{}, client: executorTLS, want: codes.Unavailable, refused: true, logged: true},
		"another application":           {server: driverTLS, client: otherApp, want: codes.Unavailable, refused: true, logged: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, addr := serve(t, tc.server, Options{}, logger(&serverLog), echo)
			logged := len(serverLog.String())
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var peer string
			err := func() error {
				c, err := Dial(ctx, addr, tc.client, Options{})
				if err != nil {
					return err
				}
				defer c.Close()
				peer = c.c.nc.LocalAddr().String()
				if err := c.Send(heartbeat(1, 1)); err != nil {
					return err
				}
				_, err = c.Recv()
				return err
			}()
			if got := status.Code(err); got != tc.want {
				t.Fatalf("code %v (%v), want %v", got, err, tc.want)
			}
			if got := tc.client.Refused(addr) != nil; got != tc.refused {
				t.Errorf("Refused(%s) = %v, want refused %v", addr, tc.client.Refused(addr), tc.refused)
			}
			if !tc.logged {
				return
			}
			// The server refuses on its own goroutine, over a real TCP
			// socket: poll its log.
			if wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true,
				func(context.Context) (bool, error) {
					lines := serverLog.String()[logged:]
					return strings.Contains(lines, rpc.RefusedMessage) && (peer == "" || strings.Contains(lines, "peer="+peer)), nil
				}) != nil {
				t.Fatalf("the server did not log the refusal of %q:\n%s", peer, serverLog.String())
			}
		})
	}
}

// rawClient connects without the client's code: preamble, hello, and then
// whatever the test writes.
func rawClient(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := nc.Write([]byte(preamble)); err != nil {
		t.Fatal(err)
	}
	c := newConn(nc, Options{}.withDefaults())
	control, p, err := c.next()
	if err != nil || !control || p[0] != kindHello {
		t.Fatalf("hello: %v %v %v", control, p, err)
	}
	c.release()
	return nc
}

// recvErrs runs handlers that record the error ending their Recv loop.
func recvErrs(t *testing.T, opts Options) (string, <-chan error, <-chan int) {
	errs, received := make(chan error, 1), make(chan int, 1)
	_, addr := serve(t, rpc.Auth{}, opts, nil, func(s *ServerStream) error {
		n := 0
		for {
			if _, err := s.Recv(); err != nil {
				received <- n
				errs <- err
				return err
			}
			n++
		}
	})
	return addr, errs, received
}

func frame(m *pb.ExecutorMessage) []byte {
	c := &conn{opts: Options{}.withDefaults()}
	var w bytes.Buffer
	c.nc = fakeWriter{&w}
	if err := c.send(m); err != nil {
		panic(err)
	}
	return w.Bytes()
}

// fakeWriter is a net.Conn that only writes, into a buffer.
type fakeWriter struct{ w *bytes.Buffer }

func (f fakeWriter) Write(p []byte) (int, error)    { return f.w.Write(p) }
func (fakeWriter) Read([]byte) (int, error)         { return 0, io.EOF }
func (fakeWriter) Close() error                     { return nil }
func (fakeWriter) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (fakeWriter) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (fakeWriter) SetDeadline(time.Time) error      { return nil }
func (fakeWriter) SetReadDeadline(time.Time) error  { return nil }
func (fakeWriter) SetWriteDeadline(time.Time) error { return nil }

// TestPeerVanishes: a connection that ends without the end frame, in the
// middle of a frame or between two, is an error, never io.EOF (which means
// the peer ended the stream on purpose).
func TestPeerVanishes(t *testing.T) {
	whole := frame(heartbeat(7, 100))
	tests := map[string]struct {
		write []byte
		n     int // messages the handler reads before the error
	}{
		"mid-header":           {write: whole[:1], n: 0},
		"mid-frame":            {write: whole[:len(whole)/2], n: 0},
		"between frames":       {write: whole, n: 1},
		"after a partial next": {write: append(append([]byte{}, whole...), whole[:10]...), n: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			addr, errs, received := recvErrs(t, Options{})
			nc := rawClient(t, addr)
			if _, err := nc.Write(tc.write); err != nil {
				t.Fatal(err)
			}
			nc.Close()
			if n := <-received; n != tc.n {
				t.Errorf("read %d messages, want %d", n, tc.n)
			}
			if err := <-errs; errors.Is(err, io.EOF) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("Recv: %v, want io.ErrUnexpectedEOF and not io.EOF", err)
			}
		})
	}
}

// TestOversizeFrames: a frame over the limit is refused when read, and a
// message over it is refused before it is written, the stream staying
// usable.
func TestOversizeFrames(t *testing.T) {
	t.Run("read", func(t *testing.T) {
		addr, errs, _ := recvErrs(t, Options{MaxFrame: 1 << 10})
		nc := rawClient(t, addr)
		// A header announcing 1 GiB, and nothing after it: the server must
		// refuse it from the header, not wait for or allocate the body.
		if _, err := nc.Write(binary.AppendUvarint(nil, uint64(1<<30)<<1)); err != nil {
			t.Fatal(err)
		}
		if err := <-errs; status.Code(err) != codes.ResourceExhausted {
			t.Errorf("Recv: %v, want ResourceExhausted", err)
		}
	})
	t.Run("write", func(t *testing.T) {
		_, addr := serve(t, rpc.Auth{}, Options{}, nil, echo)
		c := dial(t, addr, rpc.Auth{}, Options{MaxFrame: 1 << 10})
		if err := c.Send(heartbeat(1, 1000)); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("Send of a message over the limit: %v, want ResourceExhausted", err)
		}
		if err := c.Send(heartbeat(2, 10)); err != nil {
			t.Fatal(err)
		}
		got, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if id := got.GetLaunch().GetTasks()[0].GetTaskId(); id != 2 {
			t.Errorf("reply to task %d, want 2", id)
		}
	})
}

// reasonSize is the size of message i's reason in TestConcurrentWriters:
// from a few bytes to past the pooled buffers, mostly small.
func reasonSize(i int) int {
	if i%10 == 0 {
		return (i * 7919) % (80 << 10)
	}
	return i % 700
}

// TestConcurrentWriters: goroutines sending at once on one stream, from
// the driver's side while the executor sends too, interleave whole
// messages, each goroutine's in its order.
func TestConcurrentWriters(t *testing.T) {
	const writers, each = 8, 150
	_, addr := serve(t, rpc.Auth{}, Options{}, nil, func(s *ServerStream) error {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					reason := strings.Repeat("x", reasonSize(i))
					if err := s.Send(&pb.DriverMessage{Msg: &pb.DriverMessage_Kill{Kill: &pb.KillTask{TaskId: int64(w<<32 | i), Reason: reason}}}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		// The executor's messages, read meanwhile.
		for {
			if _, err := s.Recv(); err != nil {
				wg.Wait()
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	})
	c := dial(t, addr, rpc.Auth{}, Options{})
	sent := make(chan error, 1)
	go func() {
		for i := range 1000 {
			if err := c.Send(heartbeat(int64(i), i%50)); err != nil {
				sent <- err
				return
			}
		}
		sent <- c.CloseSend()
	}()
	next := make([]int, writers)
	for range writers * each {
		m, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		k := m.GetKill()
		w, i := int(k.GetTaskId()>>32), int(k.GetTaskId()&(1<<32-1))
		if i != next[w] {
			t.Fatalf("writer %d: message %d, want %d", w, i, next[w])
		}
		if want := reasonSize(i); len(k.GetReason()) != want {
			t.Fatalf("writer %d message %d: %d bytes of reason, want %d", w, i, len(k.GetReason()), want)
		}
		next[w]++
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after all messages: %v, want io.EOF", err)
	}
}

// TestStuckPeer: a peer that stops reading makes a send fail after the
// write timeout, and the connection closes, so the handler's Recv returns
// too (no goroutine waits forever on a dead executor).
func TestStuckPeer(t *testing.T) {
	sendErr, recvErr := make(chan error, 1), make(chan error, 1)
	_, addr := serve(t, rpc.Auth{}, Options{WriteTimeout: 200 * time.Millisecond}, nil, func(s *ServerStream) error {
		go func() {
			for {
				if err := s.Send(launch(1, 1<<20)); err != nil {
					sendErr <- err
					return
				}
			}
		}()
		for {
			if _, err := s.Recv(); err != nil {
				recvErr <- err
				return err
			}
		}
	})
	c := dial(t, addr, rpc.Auth{}, Options{})
	// It sends (a client's preamble goes with its first message), then
	// never reads.
	if err := c.Send(heartbeat(1, 1)); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan error{"Send": sendErr, "Recv": recvErr} {
		select {
		case err := <-ch:
			if err == nil {
				t.Errorf("%s: no error", name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still blocked 10 s after the peer stopped reading", name)
		}
	}
}

// TestStop: Stop ends the handlers of open connections; GracefulStop waits
// for them.
func TestStop(t *testing.T) {
	t.Run("Stop", func(t *testing.T) {
		s, addr := serve(t, rpc.Auth{}, Options{}, nil, echo)
		c := dial(t, addr, rpc.Auth{}, Options{})
		if err := c.Send(heartbeat(1, 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Recv(); err != nil {
			t.Fatal(err)
		}
		s.Stop()
		if _, err := c.Recv(); err == nil || errors.Is(err, io.EOF) {
			t.Errorf("Recv after Stop: %v, want a broken connection", err)
		}
		if _, err := Dial(t.Context(), addr, rpc.Auth{}, Options{}); err == nil {
			t.Error("dialled a stopped server")
		}
	})
	t.Run("GracefulStop", func(t *testing.T) {
		s, addr := serve(t, rpc.Auth{}, Options{}, nil, echo)
		c := dial(t, addr, rpc.Auth{}, Options{})
		// A round trip first: Dial does not wait for the server (the
		// preamble goes with the first message), and a stop that closes
		// the listener before it accepted the connection resets it.
		roundTrip := func(id int64) {
			t.Helper()
			if err := c.Send(heartbeat(id, 1)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Recv(); err != nil {
				t.Fatal(err)
			}
		}
		roundTrip(1)
		stopped := make(chan struct{})
		go func() { s.GracefulStop(); close(stopped) }()
		// Still served until the client ends its stream.
		roundTrip(2)
		select {
		case <-stopped:
			t.Fatal("GracefulStop returned with a stream open")
		case <-time.After(50 * time.Millisecond):
		}
		if err := c.CloseSend(); err != nil {
			t.Fatal(err)
		}
		<-stopped
		if _, err := c.Recv(); !errors.Is(err, io.EOF) {
			t.Errorf("Recv: %v, want io.EOF", err)
		}
	})
}

// TestNotAClient: something else than a control client (an HTTP request)
// is refused and logged.
func TestNotAClient(t *testing.T) {
	var log logtest.Buffer
	_, addr := serve(t, rpc.Auth{}, Options{}, logger(&log), echo)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_, _ = nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.Copy(io.Discard, nc); err != nil || n != 0 {
		t.Errorf("the server answered %d bytes (%v), want a closed connection", n, err)
	}
	if !strings.Contains(log.String(), "not a drover control-stream client") {
		t.Errorf("log:\n%s", log.String())
	}
}

// TestDialHonoursContext: a server that accepts but never answers holds
// a client no longer than its context. A client that must prove a secret
// waits for the server's hello in Dial; one that sends no proof returns
// from Dial at once and waits for the hello with the answer to its first
// message, which the caller bounds by closing the stream, as an executor's
// registration does.
func TestDialHonoursContext(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	t.Run("waits for the hello in Dial", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		if _, err := Dial(ctx, lis.Addr().String(), rpc.Auth{AppID: app, Secret: "s3cret"}, Options{}); err == nil {
			t.Fatal("dialled a server that never said hello")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Dial returned after %s", d)
		}
	})
	t.Run("waits for the hello with the first answer", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		c, err := Dial(ctx, lis.Addr().String(), rpc.Auth{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		defer stop()
		if err := c.Send(heartbeat(1, 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Recv(); err == nil {
			t.Fatal("an answer from a server that never said hello")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Recv returned after %s", d)
		}
	})
}

// TestHandshakeTimeout: a connection that never completes the handshake
// is closed after HandshakeTimeout, without reaching the handler.
func TestHandshakeTimeout(t *testing.T) {
	reached := make(chan struct{}, 1)
	_, addr := serve(t, rpc.Auth{AppID: app, Secret: "s"}, Options{HandshakeTimeout: 100 * time.Millisecond}, nil, func(*ServerStream) error {
		reached <- struct{}{}
		return nil
	})
	for name, send := range map[string][]byte{"silent": nil, "preamble, no proof": []byte(preamble)} {
		t.Run(name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write(send); err != nil {
				t.Fatal(err)
			}
			_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.Copy(io.Discard, nc); err != nil {
				t.Errorf("the server did not close the connection: %v", err)
			}
		})
	}
	select {
	case <-reached:
		t.Error("the handler ran for a connection that did not authenticate")
	default:
	}
}

// TestNoBigFrameBeforeTheProof: a peer that has not proved the secret and
// announces a 200 MiB frame is refused at its header; reading the frame
// had the driver allocate it for a peer that knows nothing, and hold it
// until the handshake timed out.
func TestNoBigFrameBeforeTheProof(t *testing.T) {
	_, addr := serve(t, rpc.Auth{AppID: app, Secret: "s"}, Options{HandshakeTimeout: 5 * time.Second}, nil, func(*ServerStream) error {
		t.Error("the handler ran for a connection that did not authenticate")
		return nil
	})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	header := binary.AppendUvarint([]byte(preamble), (200<<20)<<1|1)
	if _, err := nc.Write(header); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := io.Copy(io.Discard, nc); err != nil {
		t.Errorf("the server did not close the connection: %v", err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("the server allocated %d MiB for an unauthenticated peer's frame header", grew>>20)
	}
	if waited := time.Since(start); waited > 4*time.Second {
		t.Errorf("the connection was closed after %v, at the handshake timeout, not at the header", waited)
	}

	// A client without the secret, whose first message is longer than a
	// proof, is told what is wrong: the secret, not the frame's size.
	c, err := Dial(t.Context(), addr, rpc.Auth{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: &pb.Register{
		AppId: app, ExecutorId: "1", Address: strings.Repeat("x", 200)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(); status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "missing or wrong application secret") {
		t.Errorf("a client without the secret: %v; want Unauthenticated naming the secret", err)
	}
}

// chunkedConn is a net.Conn that reads b at most chunk bytes a call.
type chunkedConn struct {
	fakeWriter
	b     []byte
	chunk int
}

func (c *chunkedConn) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.b)
	c.b = c.b[n:]
	return n, nil
}

// TestReaderBuffers: frames of every size class, however the reads split
// them, come out whole, and a connection between frames holds no buffer but
// its tiny one (an idle executor's connection costs the driver no more).
func TestReaderBuffers(t *testing.T) {
	sizes := []int{0, 1, tinySize - 2, tinySize, tinySize + 1, 600, 16 << 10, pooledSize - 3, pooledSize, pooledSize + 1, 200 << 10, 5}
	var stream []byte
	for i, n := range sizes {
		p := bytes.Repeat([]byte{byte(i + 1)}, n)
		stream = binary.AppendUvarint(stream, uint64(n)<<1)
		stream = append(stream, p...)
	}
	for _, chunk := range []int{1, 7, tinySize, 1000, 1 << 30} {
		c := newConn(&chunkedConn{b: stream, chunk: chunk}, Options{}.withDefaults())
		var got []int
		for range sizes {
			control, p, err := c.next()
			if err != nil {
				t.Fatalf("chunks of %d: frame %d: %v", chunk, len(got), err)
			}
			if control || !bytes.Equal(p, bytes.Repeat([]byte{byte(len(got) + 1)}, len(p))) {
				t.Fatalf("chunks of %d: frame %d of %d bytes is not the one sent", chunk, len(got), len(p))
			}
			got = append(got, len(p))
			c.release()
			if c.w == c.r && (c.pooled != nil || len(c.buf) != tinySize) {
				t.Fatalf("chunks of %d: after frame %d, nothing unread, the connection holds a %d-byte buffer (pooled: %t)",
					chunk, len(got), len(c.buf), c.pooled != nil)
			}
		}
		if diff := cmp.Diff(sizes, got); diff != "" {
			t.Errorf("chunks of %d: frame sizes (-sent +read):\n%s", chunk, diff)
		}
		if _, _, err := c.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("chunks of %d: after the last frame: %v, want io.ErrUnexpectedEOF", chunk, err)
		}
	}
}

// heldConn is a client's TCP connection whose writes wait in a buffer
// while hold is set, and go out in one write at flush.
type heldConn struct {
	net.Conn
	hold bool
	buf  []byte
}

func (h *heldConn) Write(p []byte) (int, error) {
	if h.hold {
		h.buf = append(h.buf, p...)
		return len(p), nil
	}
	return h.Conn.Write(p)
}

func (h *heldConn) flush() error {
	h.hold = false
	_, err := h.Conn.Write(h.buf)
	h.buf = nil
	return err
}

// TestBufferedFrames: frames that reach the driver together are all read,
// however they are buffered when the socket has nothing more to read: in
// the driver's read buffer (one TCP write, no TLS), inside TLS as the rest
// of a decrypted record (several frames in one record), or inside TLS as
// records not yet decrypted (several records in one TCP write). The driver
// waits for its socket to be readable only after it read what those
// buffers hold, or its handler would hang.
func TestBufferedFrames(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	driverTLS, executorTLS := tlsPair(t, app, quiet, quiet)
	const frames = 5
	for _, tc := range []struct {
		name      string
		auths     [2]rpc.Auth
		oneRecord bool // all frames in one TLS write
	}{
		{"plain", [2]rpc.Auth{}, false},
		{"TLS, one record", [2]rpc.Auth{driverTLS, executorTLS}, true},
		{"TLS, a record each", [2]rpc.Auth{driverTLS, executorTLS}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := serve(t, tc.auths[0], Options{}, nil, echo)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			tcp, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			held := &heldConn{Conn: tcp}
			nc, err := tc.auths[1].ClientHandshake(ctx, addr, held)
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewClient(ctx, nc, tc.auths[1], Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// The preamble goes now: the frames below may bypass the
			// client, which would send it with its first message.
			if err := c.c.write(nil, nil); err != nil {
				t.Fatal(err)
			}
			held.hold = true
			if tc.oneRecord {
				var b []byte
				for i := range frames {
					b = append(b, frame(heartbeat(int64(i+1), i))...)
				}
				if _, err := nc.Write(b); err != nil {
					t.Fatal(err)
				}
			} else {
				for i := range frames {
					if err := c.Send(heartbeat(int64(i+1), i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := held.flush(); err != nil {
				t.Fatal(err)
			}
			// A handler stuck waiting for more would never answer: the
			// deadline ends Recv.
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			var got []int64
			for range frames {
				m, err := c.Recv()
				if err != nil {
					t.Fatalf("after %d replies: %v", len(got), err)
				}
				got = append(got, m.GetLaunch().GetTasks()[0].GetTaskId())
			}
			if diff := cmp.Diff([]int64{1, 2, 3, 4, 5}, got); diff != "" {
				t.Errorf("replies to the tasks (-sent +answered):\n%s", diff)
			}
		})
	}
}

// TestIdleStack: a driver's goroutine waiting for its executor's next
// message keeps a new goroutine's stack, however deep the TLS handshake,
// reading the last message and handling it (off its stack) went: an
// executor costs the driver 2 KiB of stack, not 4 or 8.
func TestIdleStack(t *testing.T) {
	if raceEnabled {
		// The race detector's instrumentation makes every frame larger.
		t.Skip("stack sizes are not those of a normal build under -race")
	}
	const n = 200
	quiet := slog.New(slog.DiscardHandler)
	driverTLS, executorTLS := tlsPair(t, app, quiet, quiet)
	_, addr := serve(t, driverTLS, Options{}, nil, func(s *ServerStream) error {
		for {
			m, err := s.Recv()
			if err != nil {
				return nil
			}
			s.OffStack(func() { err = s.Send(launch(m.GetHeartbeat().GetUnixNano(), 2000)) })
			if err != nil {
				return err
			}
		}
	})
	// The server's pooled goroutines (handshakes, OffStack) are shared by
	// all connections: start them before measuring, with connections at
	// once, as a loaded machine's scheduling can make a few of the
	// connections below overlap and start another.
	roundTrips := func(c *ClientStream, i int) error {
		for j := range 3 {
			if err := c.Send(heartbeat(int64(i), 100*j)); err != nil {
				return err
			}
			if _, err := c.Recv(); err != nil {
				return err
			}
		}
		return nil
	}
	warm := make(chan error, 16)
	for i := range cap(warm) {
		c := dial(t, addr, executorTLS, Options{})
		go func() { warm <- roundTrips(c, i) }()
	}
	for range cap(warm) {
		if err := <-warm; err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		if err := roundTrips(dial(t, addr, executorTLS, Options{}), i); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if per := float64(after.StackInuse-before.StackInuse) / n / 1024; per > 2.5 {
		t.Errorf("%.1f KiB of stack per connection waiting for its next message, want 2", per)
	}
}

// BenchmarkPingPong is one heartbeat up and one launch down on a mutual TLS
// stream: the per-message cost of the driver's side (with its reads off
// the handler's stack) and the executor's.
func BenchmarkPingPong(b *testing.B) {
	quiet := slog.New(slog.DiscardHandler)
	ca, err := mtls.NewAuthority(app, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	var auths [2]rpc.Auth
	for i, role := range []string{mtls.RoleDriver, mtls.RoleExecutor} {
		bundle, err := ca.Issue(role)
		if err != nil {
			b.Fatal(err)
		}
		if auths[i], err = (rpc.Auth{}).WithTLS(bundle, quiet); err != nil {
			b.Fatal(err)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	serveOn(b, lis, auths[0], Options{}, quiet, echo)
	c, err := Dial(b.Context(), lis.Addr().String(), auths[1], Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for b.Loop() {
		if err := c.Send(heartbeat(1, 4)); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegistration is an executor's registration as the driver sees
// it: connect, handshake, the first message and its answer, close; with
// mutual TLS, the executor resumes the session the driver prepared, as
// executors do; the driver listens as it does (ListenConfig). Both ends
// run in this process.
func BenchmarkRegistration(b *testing.B) {
	quiet := slog.New(slog.DiscardHandler)
	ca, err := mtls.NewAuthority(app, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	var loaded [2]*mtls.Loaded
	for i, role := range []string{mtls.RoleDriver, mtls.RoleExecutor} {
		bundle, err := ca.Issue(role)
		if err != nil {
			b.Fatal(err)
		}
		if loaded[i], err = bundle.Load(); err != nil {
			b.Fatal(err)
		}
	}
	driver := rpc.Auth{}.WithLoaded(loaded[0], quiet)
	withSession, err := driver.PrepareSession(b.Context(), loaded[1], nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		server, client rpc.Auth
	}{
		{"plain", rpc.Auth{}, rpc.Auth{}},
		{"mutual TLS, resumed", driver, rpc.Auth{}.WithLoaded(withSession, quiet)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			lc := ListenConfig() // the driver's
			lis, err := lc.Listen(b.Context(), "tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			serveOn(b, lis, tc.server, Options{}, quiet, echo)
			for b.Loop() {
				c, err := Dial(b.Context(), lis.Addr().String(), tc.client, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Send(heartbeat(1, 1)); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Recv(); err != nil {
					b.Fatal(err)
				}
				_ = c.Close()
			}
		})
	}
}
