package mtls

import (
	"crypto/tls"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

// TestAcceptingRoles: a configuration made Accepting(role) refuses, in
// the handshake, a peer of the application whose certificate names the
// other role, as a server and as a client, on full and resumed
// handshakes; without Accepting either role passes. Each (server,
// client) pair is tried.
func TestAcceptingRoles(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	driver, resuming := prepared(t, a) // the driver holds the session it prepared
	executor, err := a.executor.Load()
	if err != nil {
		t.Fatal(err)
	}
	resumingExecutor, err := resuming.Load()
	if err != nil {
		t.Fatal(err)
	}
	roleOf := map[*Loaded]string{driver: RoleDriver, executor: RoleExecutor, resumingExecutor: RoleExecutor}
	for _, tc := range []struct {
		name           string
		server, client *Loaded
		// serverOnly, clientOnly: the one role each side accepts ("" any).
		serverOnly, clientOnly string
		resumed                bool
		refusedBy              string // "server", "client" or ""
	}{
		// The control stream: the driver serves, executors dial.
		{name: "driver serves executor", server: driver, client: executor, serverOnly: RoleExecutor, clientOnly: RoleDriver},
		{name: "driver serves executor, resumed", server: driver, client: resumingExecutor, serverOnly: RoleExecutor, clientOnly: RoleDriver, resumed: true},
		{name: "driver serves driver", server: driver, client: driver, serverOnly: RoleExecutor, clientOnly: RoleDriver, refusedBy: "server"},
		{name: "executor serves executor", server: executor, client: executor, serverOnly: RoleExecutor, clientOnly: RoleDriver, refusedBy: "client"},
		// Without Accepting (gRPC: checked per call), every pair passes.
		{name: "any: executor serves executor", server: executor, client: executor},
		{name: "any: executor serves driver", server: executor, client: driver},
		{name: "any: driver serves driver", server: driver, client: driver},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, client := tc.server, tc.client
			if tc.serverOnly != "" {
				server = server.Accepting(tc.serverOnly)
			}
			if tc.clientOnly != "" {
				client = client.Accepting(tc.clientOnly)
			}
			var sr, cr recorder
			res := exchange(t, server.ServerConfig(sr.onRefuse), client.ResumingClientConfig(cr.onRefuse))
			switch tc.refusedBy {
			case "":
				if res.serverErr != nil || res.clientErr != nil {
					t.Fatalf("server error %v, client error %v", res.serverErr, res.clientErr)
				}
				if res.state.DidResume != tc.resumed {
					t.Errorf("resumed %v, want %v", res.state.DidResume, tc.resumed)
				}
				if got, err := PeerRole(res.state); err != nil || got != roleOf[tc.client] {
					t.Errorf("the server's PeerRole = %q, %v; want %q", got, err, roleOf[tc.client])
				}
			case "server":
				checkRefused(t, "server", &sr, res.clientAddr, "client certificate (drover://app/app-a/driver) is an application's driver, and only its executor may be the client here")
				if res.clientErr == nil {
					t.Error("the client completed an exchange the server refused")
				}
			case "client":
				checkRefused(t, "client", &cr, "", "server certificate (drover://app/app-a/executor) is an application's executor, and only its driver may be the server here")
				if res.serverErr == nil {
					t.Error("the server completed an exchange the client refused")
				}
			}
		})
	}
}

// TestResumedServerRoleIsTheSessions shows the limit resume.go states: a
// server that holds the executors' bundle with its session (every
// executor does) resumes it with an executor and shows the driver's
// certificate from it, which passes Accepting(RoleDriver), without the
// driver's key. A full handshake from the same server is refused.
func TestResumedServerRoleIsTheSessions(t *testing.T) {
	_, client, posing := sessionImpostor(t)
	for _, serve := range []bool{true, false} {
		server := posing(serve)
		var cr recorder
		res := exchange(t, server, client.Accepting(RoleDriver).ResumingClientConfig(cr.onRefuse))
		switch {
		case serve && (res.clientErr != nil || !res.state.DidResume):
			// If crypto/tls ever refuses this, resume.go's caveat can go.
			t.Errorf("serving the session: client error %v, resumed %v; want the resumed connection resume.go warns of",
				res.clientErr, res.state.DidResume)
		case !serve && (res.clientErr == nil || !strings.Contains(res.clientErr.Error(), "only its driver may be the server")):
			t.Errorf("a full handshake with an executor's certificate: client error %v, want the role refused", res.clientErr)
		}
	}
}

// sessionImpostor prepares an application's session as its driver does,
// and returns the driver, an executor resuming it, and the configuration
// of a server holding another executor's copy of the same bundle, which
// serves the session when serve is set.
func sessionImpostor(t *testing.T) (driver, client *Loaded, posing func(serve bool) *tls.Config) {
	t.Helper()
	driver, resuming := prepared(t, newApp(t, "app-a", time.Now()))
	client, err := resuming.Load()
	if err != nil {
		t.Fatal(err)
	}
	other, err := resuming.Load() // another executor, the same bundle
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(resuming.SessionPEM)
	state, err := tls.ParseSessionState(block.Bytes[1+block.Bytes[0]:])
	if err != nil {
		t.Fatal(err)
	}
	return driver, client, func(serve bool) *tls.Config {
		server := other.ServerConfig(nil)
		if serve {
			server.UnwrapSession = func([]byte, tls.ConnectionState) (*tls.SessionState, error) { return state, nil }
		}
		return server
	}
}
