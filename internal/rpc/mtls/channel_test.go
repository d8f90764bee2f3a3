package mtls

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// channelExchange runs a handshake between server and client over loopback
// TCP; the server then signs the connection with signer, and the client
// checks the signature as an executor checks its driver's hello.
func channelExchange(t *testing.T, server *tls.Config, signer *Loaded, client *Loaded) (resumed bool, err error) {
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
		sig, _ := signer.SignChannel(tc.ConnectionState())
		sigs <- sig
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

// A holder of the executors' Secret can serve the session the driver
// prepared (TestResumedServerRoleIsTheSessions), and so show executors the
// driver's certificate; it cannot sign the connection with the driver's
// key, and executors check that signature before they take anything.
func TestResumedServerMustProveTheDriversKey(t *testing.T) {
	driver, client, posing := sessionImpostor(t)
	impostor := posing(true)
	// The impostor signs with the key it holds: the executors'.
	signer, err := client.Bundle().Load()
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := channelExchange(t, impostor, signer, client)
	if !resumed {
		t.Fatal("the impostor's connection did not resume the session: the test shows nothing")
	}
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not made with its certificate's key") {
		t.Errorf("an executor serving the driver's session: %v, want its proof refused", err)
	}

	// The driver, resumed or not, proves its key.
	for _, cfg := range []*tls.Config{driver.Accepting(RoleExecutor).ServerConfig(nil), driver.ServerConfig(nil)} {
		if _, err := channelExchange(t, cfg, driver, client); err != nil {
			t.Errorf("the driver's proof: %v", err)
		}
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
