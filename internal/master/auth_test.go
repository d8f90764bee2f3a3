package master

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
)

// Executors resume the session the driver prepared (mtls.Loaded.PrepareSession):
// the bundle they are given, decoded as an executor process decodes it,
// makes the control connection's handshake a resumed one.
func TestExecutorsResumeTheDriversSession(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	sec, err := NewSecurity("drover-0123456789abcdef", SecurityOptions{Authenticate: true, Crypto: true}, URL{Kind: Kubernetes, APIServer: "https://127.0.0.1:6443"}, time.Now(), log)
	if err != nil {
		t.Fatal(err)
	}
	given, _ := sec.Executors.TLS()
	decoded, err := mtls.Decode(given.AppID, given.Encode())
	if err != nil {
		t.Fatal(err)
	}
	executor, err := (rpc.Auth{}).WithTLS(decoded, log)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		server, client := handshake(t, sec.Driver, executor)
		if !server.HandshakeComplete || !server.DidResume || !client.DidResume {
			t.Errorf("connection %d: server completed %v, resumed %v; client resumed %v; want a resumed session",
				i, server.HandshakeComplete, server.DidResume, client.DidResume)
		}
	}
}

// handshake runs the control connection's handshake between driver and
// executor over loopback and returns both ends' states.
func handshake(t *testing.T, driver, executor rpc.Auth) (server, client tls.ConnectionState) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan tls.ConnectionState, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			served <- tls.ConnectionState{}
			return
		}
		defer raw.Close()
		conn, err := driver.ServerHandshake(t.Context(), raw)
		if err != nil {
			served <- tls.ConnectionState{}
			return
		}
		served <- conn.(*tls.Conn).ConnectionState()
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := executor.ClientHandshake(t.Context(), ln.Addr().String(), raw)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	defer conn.Close()
	return <-served, conn.(*tls.Conn).ConnectionState()
}

// TestRestartedDriverKnowsItsExecutors: two attempts of a driver loading
// the credentials made once (as drover submit makes them for a driver
// that may restart) accept each other's executors, and a broken store is
// refused at load.
func TestRestartedDriverKnowsItsExecutors(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	const app = "drover-0123456789abcdef"
	stored, err := NewCredentials(app, SecurityOptions{Authenticate: true, Crypto: true}, URL{Kind: Kubernetes, APIServer: "https://127.0.0.1:6443"}, time.Now(), log)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored.Driver, []byte("CA PRIVATE KEY")) || len(stored.Driver) == 0 || len(stored.Executors) == 0 {
		t.Fatalf("stored credentials: driver %d bytes, executors %d bytes", len(stored.Driver), len(stored.Executors))
	}
	first, err := LoadSecurity(app, stored, log)
	if err != nil {
		t.Fatal(err)
	}
	second, err := LoadSecurity(app, stored, log)
	if err != nil {
		t.Fatal(err)
	}
	// An executor of the first attempt, as its process decodes its bundle.
	given, _ := first.Executors.TLS()
	decoded, err := mtls.Decode(app, given.Encode())
	if err != nil {
		t.Fatal(err)
	}
	kept, err := (rpc.Auth{}).WithTLS(decoded, log)
	if err != nil {
		t.Fatal(err)
	}
	if server, _ := handshake(t, second.Driver, kept); !server.HandshakeComplete {
		t.Error("the second attempt refused an executor of the first")
	}
	if _, err := LoadSecurity(app, StoredCredentials{Executors: stored.Executors}, log); err == nil {
		t.Error("loaded without the driver's certificate")
	}
	if _, err := LoadSecurity("drover-fedcba9876543210", stored, log); err == nil {
		t.Error("loaded another application's credentials")
	}
	token, err := LoadSecurity(app, StoredCredentials{Secret: "s3cret"}, log)
	if err != nil || token.Driver.Secret != "s3cret" || token.Executors.Secret != "s3cret" || token.Driver.TLSEnabled() {
		t.Errorf("token credentials loaded as %+v, %v", token, err)
	}
}
