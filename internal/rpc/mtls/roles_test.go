package mtls

import (
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
