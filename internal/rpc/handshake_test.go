package rpc

import "testing"

// TestProof: a proof is good for its nonce, application and secret only,
// so a recorded one is useless on another connection.
func TestProof(t *testing.T) {
	server := Auth{AppID: "app", Secret: "s3cret"}
	nonce := []byte("nonce-1")
	tests := map[string]struct {
		client Auth
		nonce  []byte
		ok     bool
	}{
		"same secret and nonce": {client: server, nonce: nonce, ok: true},
		"another nonce":         {client: server, nonce: []byte("nonce-2")},
		"another secret":        {client: Auth{AppID: "app", Secret: "guess"}, nonce: nonce},
		"another application":   {client: Auth{AppID: "other", Secret: "s3cret"}, nonce: nonce},
		"no secret":             {client: Auth{AppID: "app"}, nonce: nonce},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := server.CheckProof(nonce, tc.client.Proof(tc.nonce))
			if (err == nil) != tc.ok {
				t.Errorf("CheckProof: %v, want ok %v", err, tc.ok)
			}
		})
	}
}
