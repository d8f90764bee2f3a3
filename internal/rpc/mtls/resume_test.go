package mtls

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// prepared returns the driver's loaded bundle and the executors' bundle
// with a session it prepared, as an executor decodes it.
func prepared(t testing.TB, a app) (*Loaded, Bundle) {
	t.Helper()
	return preparedWith(t, a, nil)
}

// preparedWith is prepared with PrepareSession's expired.
func preparedWith(t testing.TB, a app, expired func()) (*Loaded, Bundle) {
	t.Helper()
	driver, err := a.driver.Load()
	if err != nil {
		t.Fatal(err)
	}
	executors, err := a.executor.Load()
	if err != nil {
		t.Fatal(err)
	}
	l, err := driver.PrepareSession(context.Background(), executors, expired)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(a.executor.AppID, l.Bundle().Encode())
	if err != nil {
		t.Fatal(err)
	}
	return driver, b
}

func resumingConfig(t *testing.T, b Bundle, r *recorder) *tls.Config {
	t.Helper()
	l, err := b.Load()
	if err != nil {
		t.Fatal(err)
	}
	return l.ResumingClientConfig(r.onRefuse)
}

func TestPreparedSessionResumes(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	driver, executor := prepared(t, a)
	other, err := a.driver.Load() // another driver process with the same bundle
	if err != nil {
		t.Fatal(err)
	}
	peer, err := a.executor.Load()
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Resumed bool
		PeerURI string
	}
	for _, tc := range []struct {
		name   string
		server *Loaded
		want   view
	}{
		{"the driver that prepared it", driver, view{true, "drover://app/app-a/executor"}},
		{"the same driver again", driver, view{true, "drover://app/app-a/executor"}},
		{"another driver: a full handshake", other, view{false, "drover://app/app-a/executor"}},
		{"a peer executor: a full handshake", peer, view{false, "drover://app/app-a/executor"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sr, cr recorder
			res := exchange(t, tc.server.ServerConfig(sr.onRefuse), resumingConfig(t, executor, &cr))
			if res.serverErr != nil || res.clientErr != nil {
				t.Fatalf("server error %v, client error %v", res.serverErr, res.clientErr)
			}
			if len(sr.refusals())+len(cr.refusals()) != 0 {
				t.Errorf("refusals: server %+v, client %+v", sr.refusals(), cr.refusals())
			}
			got := view{res.state.DidResume, describe(res.state.PeerCertificates[0])}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("server's view of the connection (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(tls.CurveID(res.state.CurveID).String(), "X25519MLKEM768") {
				t.Errorf("key exchange %v, want the hybrid X25519MLKEM768 even when resuming", res.state.CurveID)
			}
		})
	}
}

// A session is no way in for a client of another application, and its
// identity without its secret is refused.
func TestPreparedSessionRefusals(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	b := newApp(t, "app-b", time.Now())
	driverA, executorA := prepared(t, a)
	driverB, _ := prepared(t, b)

	t.Run("another application's driver", func(t *testing.T) {
		var sr, cr recorder
		res := exchange(t, driverB.ServerConfig(sr.onRefuse), resumingConfig(t, executorA, &cr))
		if res.serverErr == nil || res.state.DidResume {
			t.Fatalf("app-b's driver accepted app-a's executor (resumed %v)", res.state.DidResume)
		}
		checkRefused(t, "client", &cr, "", `mtls: server certificate not issued by this application's CA (drover://app/app-b/driver)`)
	})

	t.Run("the identity with another session's secret", func(t *testing.T) {
		// Another driver process of app-a prepared a session of its own;
		// give it the identity of driverA's.
		_, second := prepared(t, a)
		forged := second
		forged.SessionPEM = withIdentity(t, second.SessionPEM, sessionIdentity(t, executorA.SessionPEM))
		var sr, cr recorder
		res := exchange(t, driverA.ServerConfig(sr.onRefuse), resumingConfig(t, forged, &cr))
		if res.serverErr == nil || !strings.Contains(res.serverErr.Error(), "invalid PSK binder") {
			t.Fatalf("server error %v, want the PSK binder refused", res.serverErr)
		}
		if res.clientErr == nil {
			t.Error("the client completed an exchange the server refused")
		}
	})
}

// Where resumption ends: past crypto/tls's 7-day limit, and for a client
// that keeps the tickets it is given (the driver's resume nothing), the
// handshake is a full one, and succeeds.
func TestPreparedSessionLimits(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	var expired atomic.Int32
	driver, executor := preparedWith(t, a, func() { expired.Add(1) })
	at := func(cfg *tls.Config, d time.Duration) *tls.Config {
		later := time.Now().Add(d)
		cfg.Time = func() time.Time { return later }
		return cfg
	}
	// In order: the driver reports the first offer of the expired
	// session, once.
	for _, tc := range []struct {
		name    string
		after   time.Duration
		resume  bool
		expired int32
	}{
		{"six days on", 6 * 24 * time.Hour, true, 0},
		{"a week and a minute on", 7*24*time.Hour + time.Minute, false, 1},
		{"eight days on", 8 * 24 * time.Hour, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sr, cr recorder
			res := exchange(t, at(driver.ServerConfig(sr.onRefuse), tc.after), at(resumingConfig(t, executor, &cr), tc.after))
			if res.serverErr != nil || res.clientErr != nil {
				t.Fatalf("server error %v, client error %v", res.serverErr, res.clientErr)
			}
			if res.state.DidResume != tc.resume {
				t.Errorf("resumed %v, want %v", res.state.DidResume, tc.resume)
			}
			if got := expired.Load(); got != tc.expired {
				t.Errorf("the session was reported expired %d times, want %d", got, tc.expired)
			}
		})
	}

	t.Run("a client that keeps tickets", func(t *testing.T) {
		l, err := executor.Load()
		if err != nil {
			t.Fatal(err)
		}
		var sr, cr recorder
		cfg := l.ClientConfig(cr.onRefuse)
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		for i := range 2 {
			res := exchange(t, driver.ServerConfig(sr.onRefuse), cfg)
			if res.serverErr != nil || res.clientErr != nil {
				t.Fatalf("connection %d: server error %v, client error %v", i, res.serverErr, res.clientErr)
			}
			if res.state.DidResume {
				t.Errorf("connection %d resumed a ticket the driver issued", i)
			}
		}
	})
}

func sessionIdentity(t *testing.T, sessionPEM []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(sessionPEM)
	if block == nil || block.Type != pemSession {
		t.Fatalf("no %s block", pemSession)
	}
	return block.Bytes[1 : 1+block.Bytes[0]]
}

func withIdentity(t *testing.T, sessionPEM, identity []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(sessionPEM)
	state := block.Bytes[1+block.Bytes[0]:]
	return pem.EncodeToMemory(&pem.Block{Type: pemSession, Bytes: append(append([]byte{byte(len(identity))}, identity...), state...)})
}

func TestSessionDecode(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	_, executor := prepared(t, a)
	if got, err := Decode("app-a", executor.Encode()); err != nil || !bytes.Equal(got.SessionPEM, executor.SessionPEM) {
		t.Fatalf("Decode(Encode()) = %v, %v; want the session kept", got, err)
	}
	session := func(b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: pemSession, Bytes: b}) }
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"two sessions", append(executor.Encode(), executor.SessionPEM...), "more than one TLS session"},
		{"empty session", append(a.executor.Encode(), session(nil)...), "TLS session: too short for its identity"},
		{"identity longer than the block", append(a.executor.Encode(), session([]byte{9, 1, 2})...), "TLS session: too short for its identity"},
		{"not a session state", append(a.executor.Encode(), session([]byte{1, 7, 0xff, 0xff})...), "mtls: decode bundle: TLS session: tls: invalid session encoding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode("app-a", tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode = %v, %v; want an error containing %q", got, err, tc.want)
			}
		})
	}
}

// BenchmarkHandshake is one mutual TLS 1.3 handshake between an executor
// and the driver, both ends' work, in memory: full, and resuming the
// prepared session.
func BenchmarkHandshake(b *testing.B) {
	a := newApp(b, "app-a", time.Now())
	driver, executor := prepared(b, a)
	full, err := a.executor.Load()
	if err != nil {
		b.Fatal(err)
	}
	resuming, err := executor.Load()
	if err != nil {
		b.Fatal(err)
	}
	server := driver.ServerConfig(nil)
	for _, bc := range []struct {
		name   string
		client *tls.Config
	}{{"full", full.ClientConfig(nil)}, {"resumed", resuming.ResumingClientConfig(nil)}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				sc, cc := net.Pipe()
				done := make(chan error, 1)
				go func() { done <- tls.Server(sc, server).Handshake() }()
				c := tls.Client(cc, bc.client)
				if err := c.Handshake(); err != nil {
					b.Fatal(err)
				}
				// The server's ticket (noTicket) follows its handshake.
				go func() { _, _ = c.Read(make([]byte, 1)) }()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				if c.ConnectionState().DidResume != (bc.name == "resumed") {
					b.Fatalf("resumed = %v", c.ConnectionState().DidResume)
				}
				sc.Close()
				cc.Close()
			}
		})
	}
}
