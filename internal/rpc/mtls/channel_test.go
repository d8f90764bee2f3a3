package mtls

import (
	"crypto/tls"
	"encoding/pem"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// channelExchange runs a handshake between server and client over loopback
// TCP; the server then signs the connection with sign, and the client
// checks the signature as an executor checks its driver's hello.
func channelExchange(t *testing.T, server *tls.Config, sign func(tls.ConnectionState) []byte, client *Loaded) (resumed bool, err error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sigs := make(chan []byte, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			sigs <- nil
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		tc := tls.Server(conn, server)
		if tc.Handshake() != nil {
			sigs <- nil
			return
		}
		sigs <- sign(tc.ConnectionState())
		_, _ = tc.Read(make([]byte, 1)) // until the client is done
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tc := tls.Client(raw, client.Accepting(RoleDriver).ResumingClientConfig(nil))
	if err := tc.Handshake(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	cs := tc.ConnectionState()
	return cs.DidResume, client.CheckChannel(cs, <-sigs, RoleDriver)
}

// TestResumedServerMustProveTheDriversKey: a holder of the executors'
// Secret (any executor) can serve the session the driver prepared, and so
// show executors the driver's certificate from it: crypto/tls completes
// that handshake, Accepting(RoleDriver) included (resume.go). It cannot
// sign the connection with the driver's key, and executors check that
// signature (CheckChannel) before they take anything: they refuse it.
// Without the session the same server is refused by the handshake itself;
// the driver, resumed or not, proves its key.
func TestResumedServerMustProveTheDriversKey(t *testing.T) {
	driver, client, other, posing := sessionImpostor(t)
	for _, tc := range []struct {
		name string
		sig  func(cs tls.ConnectionState) []byte
		want string
	}{
		{"no proof", func(tls.ConnectionState) []byte { return nil }, "it sent no proof of its key"},
		{"signed with the executors' key", signedBy(t, other), "its proof was not made with its certificate's key"},
	} {
		t.Run("serving the session, "+tc.name, func(t *testing.T) {
			resumed, err := channelExchange(t, posing(true), tc.sig, client)
			if !resumed {
				// If crypto/tls ever refuses this, resume.go's caveat and
				// the channel proof can go.
				t.Fatal("the impostor's connection did not resume the session: the test shows nothing")
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("an executor serving the driver's session: %v, want refused: %s", err, tc.want)
			}
		})
	}
	t.Run("a full handshake", func(t *testing.T) {
		var cr recorder
		res := exchange(t, posing(false), client.Accepting(RoleDriver).ResumingClientConfig(cr.onRefuse))
		if res.clientErr == nil || !strings.Contains(res.clientErr.Error(), "only its driver may be the server") {
			t.Errorf("a full handshake with an executor's certificate: client error %v, want the role refused", res.clientErr)
		}
	})
	t.Run("the driver", func(t *testing.T) {
		for _, cfg := range []*tls.Config{driver.Accepting(RoleExecutor).ServerConfig(nil), driver.ServerConfig(nil)} {
			if _, err := channelExchange(t, cfg, signedBy(t, driver), client); err != nil {
				t.Errorf("the driver's proof: %v", err)
			}
		}
	})
}

// signedBy is a channelExchange signer: l's SignChannel.
func signedBy(t *testing.T, l *Loaded) func(tls.ConnectionState) []byte {
	return func(cs tls.ConnectionState) []byte {
		sig, err := l.SignChannel(cs)
		if err != nil {
			t.Error(err)
		}
		return sig
	}
}

// A proof is of one connection: the driver's signature of another
// connection (relayed by a man in the middle) proves nothing on this one.
func TestChannelProofIsOfOneConnection(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	driver, resuming := prepared(t, a)
	client, err := resuming.Load()
	if err != nil {
		t.Fatal(err)
	}
	cfg := driver.Accepting(RoleExecutor).ServerConfig(nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	states := make(chan tls.ConnectionState, 2)
	go func() {
		for range 2 {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			tc := tls.Server(conn, cfg)
			if tc.Handshake() == nil {
				states <- tc.ConnectionState()
			}
			defer conn.Close()
		}
	}()
	var clients [2]tls.ConnectionState
	for i := range clients {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		tc := tls.Client(raw, client.Accepting(RoleDriver).ResumingClientConfig(nil))
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		clients[i] = tc.ConnectionState()
	}
	first := <-states
	sig, err := driver.SignChannel(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CheckChannel(clients[0], sig, RoleDriver); err != nil {
		t.Errorf("the proof on its own connection: %v", err)
	}
	if err := client.CheckChannel(clients[1], sig, RoleDriver); !errors.Is(err, ErrRefused) {
		t.Errorf("the proof on another connection: %v, want refused", err)
	}
	if err := client.CheckChannel(clients[0], nil, RoleDriver); !errors.Is(err, ErrRefused) {
		t.Errorf("no proof: %v, want refused", err)
	}
}

// sessionImpostor prepares an application's session as its driver does,
// and returns the driver, an executor resuming it, another executor's copy
// of the same bundle (what an impostor holding the executors' Secret
// holds), and the configuration of a server with that copy, which serves
// the session when serve is set.
func sessionImpostor(t *testing.T) (driver, client, other *Loaded, posing func(serve bool) *tls.Config) {
	t.Helper()
	driver, resuming := prepared(t, newApp(t, "app-a", time.Now()))
	client, err := resuming.Load()
	if err != nil {
		t.Fatal(err)
	}
	other, err = resuming.Load() // another executor, the same bundle
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(resuming.SessionPEM)
	state, err := tls.ParseSessionState(block.Bytes[1+block.Bytes[0]:])
	if err != nil {
		t.Fatal(err)
	}
	return driver, client, other, func(serve bool) *tls.Config {
		server := other.ServerConfig(nil)
		if serve {
			server.UnwrapSession = func([]byte, tls.ConnectionState) (*tls.SessionState, error) { return state, nil }
		}
		return server
	}
}

// BenchmarkChannelProof is what the proof adds to a control connection:
// the driver's signature and an executor's check, each once per
// connection.
func BenchmarkChannelProof(b *testing.B) {
	a := newApp(b, "app-a", time.Now())
	driver, resuming := prepared(b, a)
	client, err := resuming.Load()
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	states := make(chan tls.ConnectionState, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			close(states)
			return
		}
		defer conn.Close()
		tc := tls.Server(conn, driver.Accepting(RoleExecutor).ServerConfig(nil))
		if tc.Handshake() != nil {
			close(states)
			return
		}
		states <- tc.ConnectionState()
		_, _ = tc.Read(make([]byte, 1)) // until the client is done
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	tc := tls.Client(raw, client.Accepting(RoleDriver).ResumingClientConfig(nil))
	if err := tc.Handshake(); err != nil {
		b.Fatal(err)
	}
	server, ok := <-states
	if !ok {
		b.Fatal("the server's handshake failed")
	}
	sig, err := driver.SignChannel(server)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			if _, err := driver.SignChannel(server); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check", func(b *testing.B) {
		cs := tc.ConnectionState()
		for b.Loop() {
			if err := client.CheckChannel(cs, sig, RoleDriver); err != nil {
				b.Fatal(err)
			}
		}
	})
}
