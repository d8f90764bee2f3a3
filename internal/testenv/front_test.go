package testenv

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// echoServer stands in for an API server: it greets each connection with
// its name, then echoes.
type echoServer struct {
	name string
	ln   net.Listener
	wg   sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

func newEchoServer(t *testing.T, name string) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{name: name, ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() {
				defer c.Close()
				if _, err := io.WriteString(c, name+"\n"); err == nil {
					_, _ = io.Copy(c, c)
				}
			})
		}
	})
	t.Cleanup(s.kill)
	return s
}

func (s *echoServer) url() string { return "https://" + s.ln.Addr().String() }

// kill closes the listener and every connection, as SIGKILL would.
func (s *echoServer) kill() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// via connects through f and returns the connection and the name of the
// server that greeted it.
func via(t *testing.T, f *front) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.Dial("tcp", f.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	greeting, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the greeting through the front: %v", err)
	}
	return c, r, strings.TrimSpace(greeting)
}

// TestFront: connections go to the first serving server that accepts,
// bytes pass both ways, a dead server's connections break and new ones go
// to the next, and close leaves no goroutine behind.
func TestFront(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, b := newEchoServer(t, "a"), newEchoServer(t, "b")
	f, err := startFront("127.0.0.1:0", []string{a.url(), b.url()}, filepath.Join(t.TempDir(), "front.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()

	// Not ready yet: the first is skipped although it listens.
	f.setServing(APIServerName(1), true)
	c, _, got := via(t, f)
	if got != "b" {
		t.Fatalf("server 0 not ready: connected to %q, want b", got)
	}
	c.Close()

	f.setServing(APIServerName(0), true)
	c, r, got := via(t, f)
	defer c.Close()
	if got != "a" {
		t.Fatalf("both ready: connected to %q, want a, the first", got)
	}
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if echo, err := r.ReadString('\n'); err != nil || echo != "ping\n" {
		t.Fatalf("echo through the front: %q, %v", echo, err)
	}

	// The first dies: its connection breaks, new ones go to the second
	// although the front still counts it as serving (a crash, not Kill).
	a.kill()
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("server 0 died, yet its connection through the front still reads")
	}
	c2, _, got := via(t, f)
	defer c2.Close()
	if got != "b" {
		t.Fatalf("server 0 dead: connected to %q, want b", got)
	}

	// None left: the front accepts, then closes.
	b.kill()
	c3, err := net.Dial("tcp", f.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	_ = c3.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := c3.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("no server alive: read %d bytes, %v; want EOF", n, err)
	}
}

// TestFrontCloseEndsConnections: close ends the connections it forwards.
func TestFrontCloseEndsConnections(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a := newEchoServer(t, "a")
	f, err := startFront("127.0.0.1:0", []string{a.url()}, filepath.Join(t.TempDir(), "front.log"))
	if err != nil {
		t.Fatal(err)
	}
	f.setServing(KubeAPIServer, true)
	c, r, _ := via(t, f)
	defer c.Close()
	f.close()
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("front closed, yet a connection through it still reads")
	}
	if _, err := net.Dial("tcp", f.ln.Addr().String()); err == nil {
		t.Fatal("front closed, yet it accepts")
	}
	a.kill()
}
