package ctl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// The defences of issue #38's item 5, "bounded before trust": until a
// connection's first message, frames are capped, the peer has deadlines
// and one address has a bounded number of connections; a frame's buffer
// grows with the data, never to its header's claim. Most tests run on
// net.Pipe in a synctest bubble, so that deadlines pass on its fake clock.

// pipeListener hands a server the far ends of net.Pipe connections.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// dial connects to the server from the peer at ip (any port).
func (l *pipeListener) dial(ip string) net.Conn {
	client, server := net.Pipe()
	l.conns <- peerConn{server, &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}}
	return client
}

// peerConn is a pipe's end that says it is from remote.
type peerConn struct {
	net.Conn
	remote net.Addr
}

func (c peerConn) RemoteAddr() net.Addr { return c.remote }

// pipeServe runs a server on a pipeListener until the test ends; before,
// if not nil, tunes it before it serves.
func pipeServe(t *testing.T, auth rpc.Auth, opts Options, log *slog.Logger, handler Handler, before func(*Server)) *pipeListener {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lis := newPipeListener()
	s := NewServer(auth, opts, log, handler)
	if before != nil {
		before(s)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	t.Cleanup(func() { s.Stop(); <-done })
	return lis
}

// firstRecvErr runs handlers that report the error of their first Recv.
func firstRecvErr() (Handler, <-chan error) {
	errs := make(chan error, 16)
	return func(s *ServerStream) error {
		_, err := s.Recv()
		errs <- err
		return err
	}, errs
}

// TestFrameBeforeRegisterIsCapped: a connection's first frame may not
// declare more than MaxFrameBeforeRegister: it is refused from its header,
// at once, and nothing is allocated for it. Registered, the peer may send
// frames up to MaxFrame. An executor reads its hello with the same cap.
func TestFrameBeforeRegisterIsCapped(t *testing.T) {
	t.Run("server", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			handler, errs := firstRecvErr()
			lis := pipeServe(t, rpc.Auth{}, Options{}, nil, handler, nil)
			nc := lis.dial("10.0.0.1")
			defer nc.Close()
			go func() { _, _ = io.Copy(io.Discard, nc) }() // hello, then the error frame
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			// 200 MiB declared, 10 bytes sent.
			b := binary.AppendUvarint([]byte(preamble), (200<<20)<<1)
			go func() { _, _ = nc.Write(append(b, make([]byte, 10)...)) }()
			synctest.Wait()
			runtime.ReadMemStats(&after)
			select {
			case err := <-errs:
				if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "before registration") {
					t.Errorf("first Recv: %v, want ResourceExhausted before registration", err)
				}
			default:
				t.Fatal("the server waits for the body of a 200 MiB first frame instead of refusing its header")
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Errorf("the server allocated %d KiB for an unregistered peer's frame header", grew>>10)
			}
		})
	})
	t.Run("server, at the limit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			handler, errs := firstRecvErr()
			lis := pipeServe(t, rpc.Auth{}, Options{}, nil, handler, nil)
			nc := lis.dial("10.0.0.1")
			defer nc.Close()
			go func() { _, _ = io.Copy(io.Discard, nc) }()
			// A Register of exactly MaxFrameBeforeRegister bytes.
			reg := &pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: &pb.Register{AppId: app}}}
			reg.GetRegister().Address = strings.Repeat("x", MaxFrameBeforeRegister)
			overhead := proto.Size(reg) - MaxFrameBeforeRegister
			reg.GetRegister().Address = strings.Repeat("x", MaxFrameBeforeRegister-overhead)
			if proto.Size(reg) != MaxFrameBeforeRegister {
				t.Fatalf("a Register of %d bytes", proto.Size(reg))
			}
			go func() { _, _ = nc.Write(append([]byte(preamble), frame(reg)...)) }()
			synctest.Wait()
			if err := <-errs; err != nil {
				t.Errorf("a first frame of MaxFrameBeforeRegister bytes: %v", err)
			}
		})
	})
	t.Run("registered", func(t *testing.T) {
		// The cap ends with the first message: a launch-sized frame
		// passes after it (real TCP, the driver's path).
		_, addr := serve(t, rpc.Auth{}, Options{}, nil, echo)
		c := dial(t, addr, rpc.Auth{}, Options{})
		for i, ids := range []int{1, 200_000} { // 8 bytes an id: 1.6 MB
			if err := c.Send(heartbeat(int64(i+1), ids)); err != nil {
				t.Fatal(err)
			}
			if m, err := c.Recv(); err != nil || len(m.GetLaunch().GetTasks()[0].GetPayload()) != ids {
				t.Fatalf("message %d of %d ids: %v", i, ids, err)
			}
		}
	})
	t.Run("client's hello", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			client, server := net.Pipe()
			defer server.Close()
			go func() {
				// A "driver" that reads the preamble, then declares a
				// 200 MiB hello and sends nothing more.
				_, _ = io.ReadFull(server, make([]byte, len(preamble)))
				_, _ = server.Write(binary.AppendUvarint(nil, (200<<20)<<1|1))
			}()
			done := make(chan error, 1)
			go func() {
				_, err := NewClient(context.Background(), client, rpc.Auth{AppID: app, Secret: "s"}, Options{})
				done <- err
			}()
			synctest.Wait()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "limit") {
					t.Errorf("NewClient: %v, want the hello refused at its limit", err)
				}
			default:
				client.Close()
				t.Fatal("the client waits for the body of a 200 MiB hello")
			}
		})
	})
}

// stallConn is a net.Conn that reads b, then times out as a socket with a
// read deadline whose peer sends nothing more does.
type stallConn struct {
	fakeWriter
	b    []byte
	read int
}

func (c *stallConn) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	n := copy(p, c.b)
	c.b = c.b[n:]
	c.read += n
	return n, nil
}

// TestBufferGrowsWithData: the buffer a frame is read into grows with the
// bytes received, to twice what arrived at most, not to the size its
// header declares: a registered peer that declares 200 MiB and sends 10
// bytes costs the driver a pooled buffer, and a frame that does arrive
// still reads whole.
func TestBufferGrowsWithData(t *testing.T) {
	for _, sent := range []int{10, 100 << 10, 1 << 20} {
		t.Run(strconv.Itoa(sent), func(t *testing.T) {
			in := binary.AppendUvarint(nil, (200<<20)<<1)
			c := newConn(&stallConn{b: append(in, make([]byte, sent)...)}, Options{}.withDefaults())
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if _, _, err := c.next(); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("next: %v, want the stall's timeout", err)
			}
			runtime.ReadMemStats(&after)
			limit := max(pooledSize, 2*(len(in)+sent))
			if len(c.buf) > limit {
				t.Errorf("%d bytes received: a %d-byte buffer, want at most %d", len(in)+sent, len(c.buf), limit)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(4*limit) {
				t.Errorf("%d bytes received: %d KiB allocated", len(in)+sent, grew>>10)
			}
		})
	}
	t.Run("whole frames", func(t *testing.T) {
		// Growing, the frame and what follows it still read back, in
		// chunks of every size.
		big := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16+5)
		var in []byte
		in = binary.AppendUvarint(in, uint64(len(big))<<1)
		in = append(in, big...)
		in = binary.AppendUvarint(in, 3<<1)
		in = append(in, "end"...)
		for _, chunk := range []int{1000, 64 << 10, 1 << 30} {
			c := newConn(&chunkedConn{b: in, chunk: chunk}, Options{}.withDefaults())
			if _, p, err := c.next(); err != nil || !bytes.Equal(p, big) {
				t.Fatalf("chunks of %d: the large frame: %d bytes, %v", chunk, len(p), err)
			}
			c.release()
			if _, p, err := c.next(); err != nil || string(p) != "end" {
				t.Fatalf("chunks of %d: the frame after: %q, %v", chunk, p, err)
			}
			c.release()
		}
	})
	t.Run("server", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			recvd := make(chan error, 2)
			lis := pipeServe(t, rpc.Auth{}, Options{}, nil, func(s *ServerStream) error {
				for {
					if _, err := s.Recv(); err != nil {
						recvd <- err
						return err
					}
					recvd <- nil
				}
			}, nil)
			nc := lis.dial("10.0.0.1")
			defer nc.Close()
			go func() { _, _ = io.Copy(io.Discard, nc) }()
			if _, err := nc.Write(append([]byte(preamble), frame(heartbeat(1, 1))...)); err != nil {
				t.Fatal(err)
			}
			if err := <-recvd; err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b := binary.AppendUvarint(nil, (200<<20)<<1)
			if _, err := nc.Write(append(b, make([]byte, 10)...)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Errorf("a registered peer declared 200 MiB and sent 10 bytes: the server allocated %d MiB", grew>>20)
			}
		})
	})
}

// TestIdleBeforeRegisterIsClosed: a peer that completed the handshake
// and sends no Register is closed after RegisterTimeout (10 s by
// default): the handler's Recv returns DeadlineExceeded and a log line
// names the peer, whether it had anything to prove or not.
func TestIdleBeforeRegisterIsClosed(t *testing.T) {
	for name, auth := range map[string]rpc.Auth{"plain": {}, "secret": {AppID: app, Secret: "s"}} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var log logtest.Buffer
				handler, errs := firstRecvErr()
				lis := pipeServe(t, auth, Options{}, logger(&log), handler, nil)
				nc := lis.dial("10.0.0.1")
				defer nc.Close()
				c, err := NewClient(t.Context(), nc, auth, Options{})
				if err != nil {
					t.Fatal(err)
				}
				answer := make(chan error, 1)
				go func() {
					// Flushes a pipelined client's preamble, reads the
					// hello, then waits for an answer: no Register sent.
					_, err := c.Recv()
					answer <- err
				}()
				time.Sleep(9 * time.Second) // synctest's clock: just short of RegisterTimeout
				synctest.Wait()
				if len(errs) > 0 {
					t.Fatalf("closed %v before RegisterTimeout", <-errs)
				}
				time.Sleep(2 * time.Second) // synctest's clock: past RegisterTimeout
				synctest.Wait()
				select {
				case err := <-errs:
					if status.Code(err) != codes.DeadlineExceeded {
						t.Errorf("the handler's Recv: %v, want DeadlineExceeded", err)
					}
				default:
					t.Fatal("a peer that sent no Register is still connected after RegisterTimeout")
				}
				if err := <-answer; err == nil {
					t.Error("the client got an answer")
				}
				if !strings.Contains(log.String(), "no registration from") {
					t.Errorf("log:\n%s", log.String())
				}
			})
		})
	}
	t.Run("TCP", func(t *testing.T) {
		// Real time: on Linux the driver waits for the socket itself
		// (recvShallow), which must keep the deadline; 150 ms.
		addr, errs, _ := recvErrs(t, Options{RegisterTimeout: 150 * time.Millisecond})
		nc := rawClient(t, addr)
		select {
		case err := <-errs:
			if status.Code(err) != codes.DeadlineExceeded {
				t.Errorf("Recv: %v, want DeadlineExceeded", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("a TCP peer that sent no Register is still connected 2 s after a 150 ms RegisterTimeout")
		}
		_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.Copy(io.Discard, nc); err != nil {
			t.Errorf("the server did not close the connection: %v", err)
		}
	})
}

// TestPerPeerConnectionLimit: one address has at most MaxPendingPerPeer
// connections in the handshake or waiting for their Register; more wait,
// unread, and are served as places free up; other addresses are not held
// up; past MaxQueuedPerPeer waiting, more are closed at once, logged once.
func TestPerPeerConnectionLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log logtest.Buffer
		lis := pipeServe(t, rpc.Auth{}, Options{MaxPendingPerPeer: 3}, logger(&log), echo, func(s *Server) { s.maxQueued = 2 })
		// Three connections of 10.0.0.1 that never send anything.
		var stalled []net.Conn
		for range 3 {
			nc := lis.dial("10.0.0.1")
			defer nc.Close()
			stalled = append(stalled, nc)
		}
		client := func(ip string) <-chan error {
			answered := make(chan error, 1)
			c, err := NewClient(t.Context(), lis.dial(ip), rpc.Auth{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				err := c.Send(heartbeat(1, 1))
				if err == nil {
					_, err = c.Recv()
				}
				answered <- err
			}()
			return answered
		}
		waiting := client("10.0.0.1")
		other := client("10.0.0.2")
		synctest.Wait()
		if len(waiting) > 0 {
			t.Fatalf("a 4th connection of one address was served (%v) while 3 have not registered", <-waiting)
		}
		if err := <-other; err != nil {
			t.Fatalf("another address's executor: %v", err)
		}
		// One more waits; the next is closed at once.
		waiting2 := client("10.0.0.1")
		refused := lis.dial("10.0.0.1")
		synctest.Wait()
		if _, err := refused.Read(make([]byte, 1)); err == nil {
			t.Error("a connection past MaxQueuedPerPeer was read from")
		}
		refused.Close()
		if n := strings.Count(log.String(), "closing more"); n != 1 {
			t.Errorf("%d log lines about refusals, want 1:\n%s", n, log.String())
		}
		// A place freed: the oldest waiting is served, then the next.
		stalled[0].Close()
		synctest.Wait()
		if err := <-waiting; err != nil {
			t.Fatalf("the waiting connection, once a place freed: %v", err)
		}
		// Registered, it gave its place to the next.
		select {
		case err := <-waiting2:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("a registration did not free its place for the next waiting connection")
		}
	})
}

// TestManyExecutorsOneAddress: the per-peer limit leaves a local cluster
// whole: hundreds of executors connecting at once from 127.0.0.1, as
// local-cluster and the benchmarks' child processes do, all register
// (the ones past MaxPendingPerPeer wait their turn, not refused).
func TestManyExecutorsOneAddress(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	driverTLS, executorTLS := tlsPair(t, app, quiet, quiet)
	for _, tc := range []struct {
		name  string
		auths [2]rpc.Auth
		n     int
	}{
		{"plain", [2]rpc.Auth{}, 300},
		{"mutual TLS", [2]rpc.Auth{driverTLS, executorTLS}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := serve(t, tc.auths[0], Options{MaxPendingPerPeer: 8}, nil, echo)
			errs := make(chan error, tc.n)
			var start sync.WaitGroup
			start.Add(1)
			for i := range tc.n {
				go func() {
					start.Wait()
					ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
					defer cancel()
					c, err := Dial(ctx, addr, tc.auths[1], Options{})
					if err != nil {
						errs <- err
						return
					}
					defer c.Close()
					if err := c.Send(heartbeat(int64(i), 1)); err != nil {
						errs <- err
						return
					}
					_, err = c.Recv()
					errs <- err
				}()
			}
			start.Done()
			for range tc.n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
