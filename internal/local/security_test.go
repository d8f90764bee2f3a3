package local

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// tlsSecurity is what master.NewSecurity makes with
// spark.network.crypto.enabled: the driver's and the executors' mutual-TLS
// credentials from one new authority for app, the executors' with the
// session the driver prepared for them to resume.
func tlsSecurity(t testing.TB, app string, log *slog.Logger) master.Security {
	t.Helper()
	sec, err := master.NewSecurity(app, master.SecurityOptions{Authenticate: true, Crypto: true}, master.URL{Kind: master.LocalCluster}, time.Now(), log)
	if err != nil {
		t.Fatal(err)
	}
	if !sec.Driver.TLSEnabled() || !sec.Executors.TLSEnabled() {
		t.Fatal("NewSecurity made credentials without TLS")
	}
	return sec
}

// dialRecorder dials over loopback and remembers each connection's local
// address: the peer the server's refusal line must name.
type dialRecorder struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialRecorder) dial(ctx context.Context, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err == nil {
		d.mu.Lock()
		d.addrs = append(d.addrs, c.LocalAddr().String())
		d.mu.Unlock()
	}
	return c, err
}

func (d *dialRecorder) peers() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// TestIntrudersAreRefused runs a local cluster with mutual TLS (real
// executor processes) and, while it runs, clients without the
// application's credentials try everything the protocol offers: register
// as an executor (and so receive tasks and the configuration), fetch a
// kept result, fetch shuffle blocks. Each is refused in the handshake, the
// refused side logs a line naming the peer, and the job's result is the
// same as without them.
func TestIntrudersAreRefused(t *testing.T) {
	var driverLog logtest.Buffer
	log := slog.New(slog.NewTextHandler(&driverLog, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dir := t.TempDir()
	tc := startClusterWith(t, dir, 2, 1, 1, tlsSecurity(t, testApp, log), log)
	executors := tc.b.Executors()

	other := tlsSecurity(t, "drover-other-app", slog.New(slog.DiscardHandler))
	forged := tlsSecurity(t, testApp, slog.New(slog.DiscardHandler)) // names this app, another authority
	// Each intruder as a gRPC client (the executors' servers) and as a
	// control-stream client (the driver): secure wraps a raw connection in
	// its TLS, if any.
	noTLS := func(_ context.Context, _ string, raw net.Conn) (net.Conn, error) { return raw, nil }
	withAuth := func(a rpc.Auth) func(context.Context, string, net.Conn) (net.Conn, error) { return a.ClientHandshake }
	intruders := map[string]struct {
		grpc   []grpc.DialOption
		secure func(ctx context.Context, addr string, raw net.Conn) (net.Conn, error)
	}{
		"plaintext": {[]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, noTLS},
		"TLS without a certificate": {[]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}))},
			func(ctx context.Context, _ string, raw net.Conn) (net.Conn, error) {
				c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
				return c, c.HandshakeContext(ctx)
			}},
		"another application's executor":                               {rpc.DialOptions(other.Executors), withAuth(other.Executors)},
		"a certificate naming this application from another authority": {rpc.DialOptions(forged.Executors), withAuth(forged.Executors)},
	}
	attacks := map[string]struct {
		target string
		try    func(ctx context.Context, conn *grpc.ClientConn) error
	}{
		"fetch a result": {target: executors[0].Address, try: func(ctx context.Context, conn *grpc.ClientConn) error {
			stream, err := pb.NewExecutorClient(conn).FetchResult(ctx, &pb.FetchResultRequest{TaskId: 1})
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		}},
		"fetch a shuffle block": {target: executors[1].Address, try: func(ctx context.Context, conn *grpc.ClientConn) error {
			stream, err := pb.NewExecutorClient(conn).FetchBlocks(ctx, &pb.FetchBlocksRequest{ShuffleId: 0, ReduceId: 0,
				Blocks: []*pb.BlockID{{MapId: 0, TaskId: 1}}})
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		}},
	}
	for who, creds := range intruders {
		for what, a := range attacks {
			t.Run(who+"/"+what, func(t *testing.T) {
				var rec dialRecorder
				conn, err := grpc.NewClient(a.target, append(creds.grpc, grpc.WithContextDialer(rec.dial))...)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				err = a.try(ctx, conn)
				if code := status.Code(err); code != codes.Unavailable {
					t.Fatalf("got %v (%v), want Unavailable: refused before any RPC", code, err)
				}
				// The refused side says so, naming the connection.
				waitForLine(t, func() string { return driverLog.String() + executorLogs(t, dir) }, rec.peers())
			})
		}
		t.Run(who+"/register as an executor", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			var rec dialRecorder
			raw, err := rec.dial(ctx, tc.b.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			err = registerOver(ctx, raw, tc.b.URL(), creds.secure)
			if err == nil {
				t.Fatal("registered")
			}
			if who == "plaintext" && status.Code(err) != codes.Unauthenticated {
				t.Errorf("plaintext client: %v, want Unauthenticated (the driver requires TLS)", err)
			}
			waitForLine(t, driverLog.String, rec.peers())
		})
	}
	if got := len(tc.b.Executors()); got != 2 {
		t.Errorf("%d executors registered after the intrusions, want the 2 the cluster started", got)
	}
	out, err := tc.run(t.Context(), "local.pid", repeat("1", 20))
	if err != nil {
		t.Fatalf("the job after the intrusions: %v", err)
	}
	for i, pid := range out {
		if pid == "" || pid == fmt.Sprint(os.Getpid()) {
			t.Fatalf("task %d ran in %q, want an executor process", i, pid)
		}
	}

	t.Run("an executor process of another application", func(t *testing.T) {
		// A real executor process with application B's credentials, told to
		// join this driver.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), executor.Options{DriverURL: tc.b.URL(), AppID: "drover-other-app", ExecutorID: 5,
			BindHost: "127.0.0.1", Cores: 1, LocalDir: t.TempDir(), Auth: other.Executors}.Env()...)
		var stderr logtest.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("the other application's executor exited 0; stderr:\n%s", stderr.String())
			}
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("the other application's executor kept running; stderr:\n%s", stderr.String())
		}
		if !strings.Contains(stderr.String(), rpc.RefusedMessage) {
			t.Errorf("the refused executor's log does not say why:\n%s", stderr.String())
		}
		if !strings.Contains(driverLog.String(), rpc.RefusedMessage) || strings.Contains(driverLog.String(), "executor=5 ") {
			t.Errorf("the driver's log: want a refusal and no executor 5:\n%s", driverLog.String())
		}
	})

	t.Run("a recorded registration replayed from another connection", func(t *testing.T) {
		proxy := newRecordingProxy(t, tc.b.URL())
		stream, err := ctl.Dial(t.Context(), proxy.addr(), tlsSecurityOf(tc).Executors, ctl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		if err := stream.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: &pb.Register{
			AppId: testApp, ExecutorId: "77", Address: "127.0.0.1:1", Cores: 1}}}); err != nil {
			t.Fatal(err)
		}
		if msg, err := stream.Recv(); err != nil || msg.GetRegistered() == nil {
			t.Fatalf("the recorded registration itself: %v, %v", msg, err)
		}
		recorded := proxy.recorded()
		// The same bytes, from a new connection: the server's fresh
		// handshake secrets make them worthless.
		replay, err := net.Dial("tcp", tc.b.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer replay.Close()
		peer := replay.LocalAddr().String()
		_, _ = replay.Write(recorded)
		_ = replay.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.Copy(io.Discard, replay)
		waitForLine(t, driverLog.String, []string{peer})
		if strings.Contains(driverLog.String(), "executor registration refused") {
			t.Errorf("the replay reached the backend (a registration was refused there, not in the handshake):\n%s", driverLog.String())
		}
		_ = stream.CloseSend()
	})
}

// registerOver secures raw, a connection to the driver at addr, with
// secure and registers over it as an executor would; it returns why that
// failed, nil if the driver answered Registered.
func registerOver(ctx context.Context, raw net.Conn, addr string, secure func(context.Context, string, net.Conn) (net.Conn, error)) error {
	nc, err := secure(ctx, addr, raw)
	if err != nil {
		return err
	}
	stream, err := ctl.NewClient(ctx, nc, rpc.Auth{}, ctl.Options{})
	if err != nil {
		return err
	}
	defer stream.Close()
	if err := stream.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: &pb.Register{
		AppId: testApp, ExecutorId: "9", Address: "127.0.0.1:1", Cores: 8}}}); err != nil {
		return err
	}
	msg, err := stream.Recv()
	if err != nil {
		return err
	}
	if msg.GetRegistered() == nil {
		return fmt.Errorf("the driver answered %v", msg)
	}
	return nil
}

// tlsSecurityOf is the executors' credentials the cluster tc was started
// with: what a legitimate executor holds.
func tlsSecurityOf(tc *testCluster) master.Security {
	return master.Security{Executors: tc.c.opts.Auth}
}

// waitForLine waits for a refusal line naming one of peers in the text
// logs returns.
func waitForLine(t *testing.T, logs func() string, peers []string) {
	t.Helper()
	if len(peers) == 0 {
		t.Fatal("no connection was made")
	}
	deadline := time.Now().Add(10 * time.Second)
	// The executors are processes: poll their logs.
	refused := func() bool {
		for _, line := range strings.Split(logs(), "\n") {
			if !strings.Contains(line, rpc.RefusedMessage) {
				continue
			}
			for _, p := range peers {
				if strings.Contains(line, "peer="+p) {
					return true
				}
			}
		}
		return false
	}
	if wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Until(deadline), true,
		func(context.Context) (bool, error) { return refused(), nil }) != nil {
		t.Fatalf("no log line says a connection from %v was refused; logs:\n%s", peers, logs())
	}
}

// executorLogs is what the cluster's executor processes have logged.
func executorLogs(t *testing.T, dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "work", "executor-*.log"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// recordingProxy forwards one loopback connection to a server and keeps
// what the client sent.
type recordingProxy struct {
	lis net.Listener
	mu  sync.Mutex
	buf bytes.Buffer
	wg  sync.WaitGroup
}

func newRecordingProxy(t *testing.T, target string) *recordingProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{lis: lis}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(s, io.TeeReader(c, p)); s.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(func() { lis.Close(); p.wg.Wait() })
	return p
}

func (p *recordingProxy) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.Write(b)
}

func (p *recordingProxy) addr() string { return p.lis.Addr().String() }

func (p *recordingProxy) recorded() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.buf.Bytes())
}
