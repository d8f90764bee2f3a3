package mtls

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// app is one application's CA and the two bundles the driver issues.
type app struct {
	ca       *Authority
	driver   Bundle
	executor Bundle
}

func newApp(t testing.TB, appID string, now time.Time) app {
	t.Helper()
	ca, err := NewAuthority(appID, now)
	if err != nil {
		t.Fatal(err)
	}
	a := app{ca: ca}
	if a.driver, err = ca.Issue(RoleDriver); err != nil {
		t.Fatal(err)
	}
	if a.executor, err = ca.Issue(RoleExecutor); err != nil {
		t.Fatal(err)
	}
	return a
}

// refusal is one onRefuse call.
type refusal struct {
	Remote string
	Err    string
}

// recorder collects onRefuse calls; handshakes call it from their own
// goroutines.
type recorder struct {
	mu  sync.Mutex
	got []refusal
}

func (r *recorder) onRefuse(remote string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, refusal{Remote: remote, Err: err.Error()})
}

func (r *recorder) refusals() []refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]refusal(nil), r.got...)
}

// checkRefused asserts that r recorded exactly one refusal, from remote, whose
// message contains want.
func checkRefused(t *testing.T, who string, r *recorder, remote, want string) {
	t.Helper()
	got := r.refusals()
	if len(got) != 1 {
		t.Fatalf("%s onRefuse calls = %+v, want one containing %q", who, got, want)
	}
	if got[0].Remote != remote || !strings.Contains(got[0].Err, want) {
		t.Errorf("%s onRefuse(%q, %q), want (%q, …%q…)", who, got[0].Remote, got[0].Err, remote, want)
	}
}

func serverConfig(t *testing.T, b Bundle, r *recorder) *tls.Config {
	t.Helper()
	cfg, err := b.ServerConfig(r.onRefuse)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func clientConfig(t *testing.T, b Bundle, r *recorder) *tls.Config {
	t.Helper()
	cfg, err := b.ClientConfig(r.onRefuse)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// result is what each side of exchange saw.
type result struct {
	serverErr, clientErr error
	clientAddr           string // the client's local address: the server's remote
	serverAddr           string
	state                tls.ConnectionState // the server's, if the handshake succeeded
}

// exchange runs a TLS handshake over a loopback TCP connection and, if both
// sides complete it, sends "ping" from the client and "pong" back. In TLS 1.3
// the client finishes its handshake before the server has checked the
// client's certificate, so the server's refusal reaches the client on its
// first read: clientErr covers the exchange, not just the handshake.
func exchange(t *testing.T, server, client *tls.Config) result {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	deadline := time.Now().Add(10 * time.Second)

	var res result
	res.serverAddr = ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			res.serverErr = err
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(deadline)
		tc := tls.Server(conn, server)
		if res.serverErr = tc.Handshake(); res.serverErr != nil {
			return
		}
		res.state = tc.ConnectionState()
		buf := make([]byte, 4)
		if _, res.serverErr = io.ReadFull(tc, buf); res.serverErr != nil {
			return
		}
		if string(buf) != "ping" {
			res.serverErr = errors.New("server read " + string(buf))
			return
		}
		_, res.serverErr = tc.Write([]byte("pong"))
	}()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res.clientAddr = conn.LocalAddr().String()
	_ = conn.SetDeadline(deadline)
	tc := tls.Client(conn, client)
	res.clientErr = func() error {
		if err := tc.Handshake(); err != nil {
			return err
		}
		if _, err := tc.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(tc, buf); err != nil {
			return err
		}
		if string(buf) != "pong" {
			return errors.New("client read " + string(buf))
		}
		return nil
	}()
	if res.clientErr != nil {
		conn.Close() // unblock a server still waiting for the client
	}
	<-done
	return res
}

func TestSameApplication(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	for _, tc := range []struct {
		name           string
		server, client Bundle
		wantClientURI  string
	}{
		{"executor to driver", a.driver, a.executor, "drover://app/app-a/executor"},
		{"driver to executor", a.executor, a.driver, "drover://app/app-a/driver"},
		{"executor to executor", a.executor, a.executor, "drover://app/app-a/executor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sr, cr recorder
			res := exchange(t, serverConfig(t, tc.server, &sr), clientConfig(t, tc.client, &cr))
			if res.serverErr != nil || res.clientErr != nil {
				t.Fatalf("server error %v, client error %v", res.serverErr, res.clientErr)
			}
			if len(sr.refusals())+len(cr.refusals()) != 0 {
				t.Errorf("refusals: server %+v, client %+v", sr.refusals(), cr.refusals())
			}
			got := struct {
				Version string
				PeerURI string
			}{tls.VersionName(res.state.Version), describe(res.state.PeerCertificates[0])}
			want := struct {
				Version string
				PeerURI string
			}{"TLS 1.3", tc.wantClientURI}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("server's view of the connection (-want +got):\n%s", diff)
			}
		})
	}
}

// attacker is a client that presents certs (if any) and trusts any server, so
// that the server's verification is what refuses it.
func attacker(certs ...tls.Certificate) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, Certificates: certs}
}

func keyPair(t *testing.T, b Bundle) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(b.CertPEM, b.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// leafTemplate is what Issue signs, for tests to alter.
func leafTemplate(appID, role string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(42),
		Subject:      pkix.Name{CommonName: "test " + role},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{ServerName},
		URIs:         []*url.URL{identityURI(appID, role)},
	}
}

// sign makes a certificate from tmpl, signed by ca's key (or self-signed if
// ca is nil): what a careless or hostile issuer could produce.
func sign(t *testing.T, tmpl *x509.Certificate, ca *Authority) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestServerRefuses(t *testing.T) {
	now := time.Now()
	a := newApp(t, "app-a", now)
	b := newApp(t, "app-b", now)
	old := newApp(t, "app-a", now.Add(-2*DefaultValidity))

	noClientAuth := leafTemplate("app-a", RoleExecutor)
	noClientAuth.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}

	for _, tc := range []struct {
		name   string
		server Bundle
		client *tls.Config
		want   string
	}{{
		name:   "client without a certificate",
		server: a.driver,
		client: attacker(),
		want:   "no client certificate: the peer does not hold this application's credentials",
	}, {
		name:   "another application's executor",
		server: a.driver,
		client: attacker(keyPair(t, b.executor)),
		want:   "client certificate not issued by this application's CA (drover://app/app-b/executor)",
	}, {
		name:   "self-signed certificate naming this application",
		server: a.driver,
		client: attacker(sign(t, leafTemplate("app-a", RoleExecutor), nil)),
		want:   "client certificate not issued by this application's CA (drover://app/app-a/executor)",
	}, {
		name:   "expired certificate of this application's CA",
		server: old.driver,
		client: attacker(keyPair(t, old.executor)),
		want:   "client certificate (drover://app/app-a/executor) outside its validity period",
	}, {
		name:   "this CA, another application's identity",
		server: a.driver,
		client: attacker(sign(t, leafTemplate("app-b", RoleExecutor), a.ca)),
		want:   `client certificate names application "app-b" (drover://app/app-b/executor), want "app-a"`,
	}, {
		name:   "this CA, no client authentication usage",
		server: a.driver,
		client: attacker(sign(t, noClientAuth, a.ca)),
		want:   "client certificate (drover://app/app-a/executor) not valid for client authentication",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var sr recorder
			res := exchange(t, serverConfig(t, tc.server, &sr), tc.client)
			if res.serverErr == nil || res.clientErr == nil {
				t.Fatalf("server error %v, client error %v; want both to fail", res.serverErr, res.clientErr)
			}
			checkRefused(t, "server", &sr, res.clientAddr, tc.want)
		})
	}
}

// TestVerifiedOnceStillRefusesOthers: a server that verified an executor's
// certificate accepts it again (from the cache of verified certificates)
// and still refuses every other certificate, before and after.
func TestVerifiedOnceStillRefusesOthers(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	b := newApp(t, "app-b", time.Now())
	var sr recorder
	server := serverConfig(t, a.driver, &sr)
	good := clientConfig(t, a.executor, &recorder{})
	for i, tc := range []struct {
		client *tls.Config
		ok     bool
	}{
		{attacker(keyPair(t, b.executor)), false},
		{good, true},
		{good, true},
		{attacker(keyPair(t, b.executor)), false},
		{attacker(sign(t, leafTemplate("app-b", RoleExecutor), a.ca)), false},
		{attacker(sign(t, leafTemplate("app-a", RoleExecutor), nil)), false},
		{good, true},
	} {
		res := exchange(t, server, tc.client)
		if ok := res.serverErr == nil && res.clientErr == nil; ok != tc.ok {
			t.Errorf("connection %d: accepted %v, want %v (server error %v, client error %v)", i, ok, tc.ok, res.serverErr, res.clientErr)
		}
	}
	if got := len(sr.refusals()); got != 4 {
		t.Errorf("%d refusals reported, want 4: %+v", got, sr.refusals())
	}
}

func TestClientRefuses(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	b := newApp(t, "app-b", time.Now())

	noName := leafTemplate("app-a", RoleDriver)
	noName.DNSNames = nil
	noNameCert := sign(t, noName, a.ca)

	for _, tc := range []struct {
		name   string
		server *tls.Config
		want   string
	}{{
		name:   "server of another application",
		server: serverConfig(t, b.driver, &recorder{}),
		want:   "server certificate not issued by this application's CA (drover://app/app-b/driver)",
	}, {
		name:   "server certificate without ServerName",
		server: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{noNameCert}},
		want:   "server certificate (drover://app/app-a/driver) does not name drover.invalid",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var cr recorder
			res := exchange(t, tc.server, clientConfig(t, a.executor, &cr))
			if res.serverErr == nil || res.clientErr == nil {
				t.Fatalf("server error %v, client error %v; want both to fail", res.serverErr, res.clientErr)
			}
			// A tls.Config does not know the address it dials.
			checkRefused(t, "client", &cr, "", tc.want)
		})
	}
}

func TestTLS12Refused(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	var sr recorder
	client := clientConfig(t, a.executor, &recorder{})
	client.MinVersion, client.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	res := exchange(t, serverConfig(t, a.driver, &sr), client)
	if res.serverErr == nil || res.clientErr == nil {
		t.Fatalf("server error %v, client error %v; want both to fail", res.serverErr, res.clientErr)
	}
	checkRefused(t, "server", &sr, res.clientAddr, "client offers only TLS 1.2: TLS 1.3 is required")
}

func TestIssuedCertificates(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	a := newApp(t, "app-a", now)
	type summary struct {
		CommonName     string
		URIs           []string
		DNSNames       []string
		IsCA           bool
		MaxPathLenZero bool
		KeyUsage       x509.KeyUsage
		ExtKeyUsage    []x509.ExtKeyUsage
		NotBefore      time.Time
		NotAfter       time.Time
		PublicKey      string
		SerialBits     bool // random 128-bit serial: more than 64 bits set
	}
	summarize := func(pemData []byte) summary {
		t.Helper()
		block, _ := pem.Decode(pemData)
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := c.PublicKey.(*ecdsa.PublicKey)
		curve := ""
		if pub != nil {
			curve = pub.Curve.Params().Name
		}
		return summary{
			CommonName: c.Subject.CommonName, URIs: strings.Split(describe(c), ", "), DNSNames: c.DNSNames,
			IsCA: c.IsCA, MaxPathLenZero: c.MaxPathLenZero, KeyUsage: c.KeyUsage, ExtKeyUsage: c.ExtKeyUsage,
			NotBefore: c.NotBefore, NotAfter: c.NotAfter, PublicKey: curve, SerialBits: c.SerialNumber.BitLen() > 64,
		}
	}
	notBefore, notAfter := now.Add(-time.Hour), now.Add(30*24*time.Hour)
	leaf := func(role string) summary {
		return summary{
			CommonName: "drover " + role + " of application app-a", URIs: []string{"drover://app/app-a/" + role},
			DNSNames: []string{"drover.invalid"}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			NotBefore:   notBefore, NotAfter: notAfter, PublicKey: "P-256", SerialBits: true,
		}
	}
	for _, tc := range []struct {
		name string
		pem  []byte
		want summary
	}{
		{"CA", a.driver.CACertPEM, summary{
			CommonName: "drover application app-a", URIs: []string{"drover://app/app-a"},
			IsCA: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign,
			NotBefore: notBefore, NotAfter: notAfter, PublicKey: "P-256", SerialBits: true,
		}},
		{"driver", a.driver.CertPEM, leaf(RoleDriver)},
		{"executor", a.executor.CertPEM, leaf(RoleExecutor)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(tc.pem)); diff != "" {
				t.Errorf("certificate (-want +got):\n%s", diff)
			}
		})
	}
	if !bytes.Equal(a.driver.CACertPEM, a.executor.CACertPEM) {
		t.Error("driver and executor bundles hold different CA certificates")
	}
}

func TestBadArguments(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	_, errEmpty := NewAuthority("", time.Now())
	_, errSlash := NewAuthority("a/b", time.Now())
	_, errRole := a.ca.Issue("admin")
	_, errZero := Bundle{}.ServerConfig(nil)
	_, errNoKey := Bundle{AppID: "app-a", CACertPEM: a.driver.CACertPEM, CertPEM: a.driver.CertPEM}.ClientConfig(nil)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"empty application ID", errEmpty, "empty application ID"},
		{"application ID with a slash", errSlash, `application ID "a/b": only letters`},
		{"unknown role", errRole, `unknown role "admin"`},
		{"zero bundle", errZero, "empty application ID"},
		{"bundle without key", errNoKey, "no private key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", tc.err, tc.want)
			}
		})
	}
}

func TestEncodeDecode(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	for _, b := range []Bundle{a.driver, a.executor} {
		got, err := Decode("app-a", b.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(b, got); diff != "" {
			t.Errorf("Decode(Encode()) (-want +got):\n%s", diff)
		}
	}
	// Blocks are told apart by content, not order.
	reordered := append(append(append([]byte(nil), a.executor.KeyPEM...), a.executor.CertPEM...), a.executor.CACertPEM...)
	if got, err := Decode("app-a", reordered); err != nil || !bytes.Equal(got.Encode(), a.executor.Encode()) {
		t.Errorf("Decode(key, leaf, CA) = %v, %v; want the executor bundle", got, err)
	}
	if s := a.driver.String() + a.driver.GoString(); strings.Contains(s, "PRIVATE") {
		t.Errorf("String and GoString show the key: %s", s)
	}
}

func TestDecodeErrors(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	a2 := newApp(t, "app-a", time.Now()) // same application, another CA
	b := newApp(t, "app-b", time.Now())
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	ecKey := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte{1}})

	for _, tc := range []struct {
		name  string
		appID string
		data  []byte
		want  string
	}{
		{"empty input", "app-a", nil, "empty input"},
		{"only white space", "app-a", []byte(" \n"), "empty input"},
		{"not PEM", "app-a", []byte("hello"), "no PEM blocks found"},
		{"missing key", "app-a", cat(a.driver.CACertPEM, a.driver.CertPEM), `no private key (PEM block "PRIVATE KEY")`},
		{"missing CA", "app-a", cat(a.driver.CertPEM, a.driver.KeyPEM), "no CA certificate"},
		{"missing leaf", "app-a", cat(a.driver.CACertPEM, a.driver.KeyPEM), "no certificate for this process"},
		{"leaf not from the CA", "app-a", cat(a.driver.CACertPEM, a2.driver.CertPEM, a2.driver.KeyPEM),
			"the certificate (drover://app/app-a/driver) is not signed by the bundle's CA (drover://app/app-a)"},
		{"wrong application ID", "app-a", b.driver.Encode(),
			`the bundle is for application "app-b" (the CA certificate names drover://app/app-b), want "app-a"`},
		{"key of another certificate", "app-a", cat(a.driver.CACertPEM, a.driver.CertPEM, a.executor.KeyPEM),
			"the private key does not match the certificate (drover://app/app-a/driver)"},
		{"two keys", "app-a", cat(a.driver.Encode(), a.executor.KeyPEM), "more than one private key"},
		{"SEC 1 key", "app-a", cat(a.driver.CACertPEM, a.driver.CertPEM, ecKey), `unexpected PEM block "EC PRIVATE KEY"`},
		{"empty application ID", "", a.driver.Encode(), "empty application ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.appID, tc.data)
			if err == nil {
				t.Fatalf("Decode = %v, want an error containing %q", got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode error %q, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestGRPC checks the credentials helpers end to end: gRPC's ALPN and
// authority handling, and the dialled address in a client's refusal.
func TestGRPC(t *testing.T) {
	a := newApp(t, "app-a", time.Now())
	b := newApp(t, "app-b", time.Now())

	var sr recorder
	creds, err := a.driver.ServerCredentials(sr.onRefuse)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(creds))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	check := func(bundle Bundle, r *recorder) (*peer.Peer, error) {
		t.Helper()
		dial, err := bundle.DialCredentials(r.onRefuse)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(dial))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var p peer.Peer
		_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p))
		return &p, err
	}

	var cr recorder
	p, err := check(a.executor, &cr)
	if err != nil {
		t.Fatalf("same application: %v", err)
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || info.State.Version != tls.VersionTLS13 || describe(info.State.PeerCertificates[0]) != "drover://app/app-a/driver" {
		t.Errorf("client's view of the server: %#v", p.AuthInfo)
	}

	if got := cr.refusals(); len(got) != 0 {
		t.Errorf("client refusals %+v, want none", got)
	}

	_, err = check(b.executor, &cr)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("another application's client: error %v, want Unavailable", err)
	}
	// gRPC may have redialled before the channel closed: every refusal must
	// name the dialled address and the reason.
	want := refusal{ln.Addr().String(), "mtls: server certificate not issued by this application's CA (drover://app/app-a/driver)"}
	got := cr.refusals()
	if len(got) == 0 {
		t.Fatal("client onRefuse not called")
	}
	for _, r := range got {
		if r.Remote != want.Remote || !strings.HasPrefix(r.Err, want.Err) {
			t.Errorf("client onRefuse(%q, %q), want (%q, %q…)", r.Remote, r.Err, want.Remote, want.Err)
		}
	}
	// The client refuses the server before sending its own certificate, so
	// the server sees only an alert.
	if got := sr.refusals(); len(got) != 0 {
		t.Errorf("server refusals %+v, want none", got)
	}
}

// BenchmarkAuthority is the driver's start-up cost: a CA and its two bundles.
func BenchmarkAuthority(b *testing.B) {
	now := time.Now()
	for b.Loop() {
		newApp(b, "app-a", now)
	}
}
