package mtls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
)

// errNoClientCert is the refusal of a client that sent no certificate.
var errNoClientCert = errors.New("mtls: no client certificate: the peer does not hold this application's credentials")

// ServerConfig returns the TLS 1.3 configuration of a server of the bundle's
// application: it presents the bundle's certificate and accepts only clients
// holding a certificate of the same application. onRefuse, if not nil, is
// called with the client's address and the reason for every connection the
// verification refuses (including one from a client without TLS 1.3); it
// must not block, since it runs inside the handshake. crypto/tls checks a
// client's proof of holding the key after that verification, so a client
// presenting a certificate of this application without its key is refused
// but not reported.
//
// With onRefuse, each connection's config is a copy of the returned config,
// made by GetConfigForClient, which is where the client's address is known:
// change the returned config itself, not a copy of it (gRPC's own additions
// are applied to each copy).
func (b Bundle) ServerConfig(onRefuse func(remote string, err error)) (*tls.Config, error) {
	l, err := b.Load()
	if err != nil {
		return nil, err
	}
	return l.ServerConfig(onRefuse), nil
}

// Loaded is a bundle parsed and checked once: a process that builds several
// configurations from its bundle (server and client, gRPC and plain) pays
// for the parse, two signature checks and the key's once instead of once
// each, about a millisecond of a driver's or an executor's start.
// Configurations built from one Loaded share its cache of verified peers.
type Loaded struct {
	m *material
	// peerRole, if set, is the one role its configurations accept of a
	// peer (Accepting).
	peerRole string
}

// Accepting returns l whose configurations also refuse a peer whose
// certificate names another role than role, RoleDriver or RoleExecutor
// (any other accepts no peer):
// for connections whose ends have fixed roles, such as the control stream
// (an executor dials the driver). Without it either role is accepted, and
// a server checks the role per request (PeerRole). It shares l's parsed
// bundle, cache of verified peers and prepared session.
//
// On a resumed connection the peer's certificate is the prepared
// session's, not one the peer proved it holds the key of: see resume.go
// for what the role check is worth there.
func (l *Loaded) Accepting(role string) *Loaded {
	if role == "" {
		role = "(none)" // fail closed: "" would accept any
	}
	return &Loaded{m: l.m, peerRole: role}
}

// Bundle is the bundle l was loaded from, with its session if it has one.
func (l *Loaded) Bundle() Bundle {
	m := l.m
	return Bundle{AppID: m.appID, CACertPEM: m.caPEM, CertPEM: m.certPEM, KeyPEM: m.keyPEM, SessionPEM: m.sessionPEM}
}

// Load parses and checks b (see Decode) for the configurations below.
func (b Bundle) Load() (*Loaded, error) {
	m, err := b.load()
	if err != nil {
		return nil, err
	}
	return &Loaded{m: m}, nil
}

// ServerConfig is Bundle.ServerConfig.
func (l *Loaded) ServerConfig(onRefuse func(remote string, err error)) *tls.Config {
	m := l.m
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		MaxVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{m.cert},
		// RequestClientCert rather than RequireAnyClientCert: with the latter
		// crypto/tls refuses a client without a certificate itself, before
		// VerifyConnection, and the refusal could not be reported. The
		// verification below refuses it instead. ClientCAs stays empty for
		// the same reason: a client whose certificate is not from the CA it
		// names would send none, and be reported as having none.
		ClientAuth: tls.RequestClientCert,
		// The one session resumed is the one PrepareSession made; see
		// resume.go.
		UnwrapSession: m.unwrapSession,
		WrapSession:   m.wrapSession,
	}
	// Each verified client's handshake is noted (fullHandshake), at the
	// server's time: read when it runs, since callers may set cfg.Time.
	verify := func(remote string) func(tls.ConnectionState) error {
		check := m.verifyFunc(remote, onRefuse, verifyClient, l.peerRole)
		return func(cs tls.ConnectionState) error {
			if err := check(cs); err != nil {
				return err
			}
			if !cs.DidResume {
				m.fullHandshake(cfg.Time)
			}
			return nil
		}
	}
	// Backstop in case GetConfigForClient is removed from a copy: the
	// check still runs, with the address unknown.
	cfg.VerifyConnection = verify("")
	if onRefuse == nil {
		// Nothing to report, so no copy per connection: a server of
		// thousands of executors would keep one for each.
		return cfg
	}
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		remote := ""
		if hello.Conn != nil {
			remote = hello.Conn.RemoteAddr().String()
		}
		// crypto/tls refuses such a client by itself, during version
		// negotiation; report it here, where it is known, and let crypto/tls
		// send the proper alert.
		if onRefuse != nil && !slices.Contains(hello.SupportedVersions, tls.VersionTLS13) {
			offered := make([]string, len(hello.SupportedVersions))
			for i, v := range hello.SupportedVersions {
				offered[i] = tls.VersionName(v)
			}
			onRefuse(remote, fmt.Errorf("mtls: client offers only %s: TLS 1.3 is required", strings.Join(offered, ", ")))
		}
		c := cfg.Clone()
		c.GetConfigForClient = nil
		c.VerifyConnection = verify(remote)
		return c, nil
	}
	return cfg
}

// ClientConfig returns the TLS 1.3 configuration of a client of the bundle's
// application: it presents the bundle's certificate and accepts only servers
// holding a certificate of the same application that names ServerName.
// onRefuse, if not nil, is called with the reason for every server the
// verification refuses; a tls.Config does not know the address it dials, so
// remote is empty (DialCredentials reports the address).
func (b Bundle) ClientConfig(onRefuse func(remote string, err error)) (*tls.Config, error) {
	l, err := b.Load()
	if err != nil {
		return nil, err
	}
	return l.ClientConfig(onRefuse), nil
}

// ClientConfig is Bundle.ClientConfig.
func (l *Loaded) ClientConfig(onRefuse func(remote string, err error)) *tls.Config {
	return l.m.clientConfig("", onRefuse, l.peerRole)
}

// clientConfig is a client's configuration; role, if set, is the only
// role of server it accepts.
func (m *material) clientConfig(remote string, onRefuse func(string, error), role string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		MaxVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{m.cert},
		// RootCAs and ServerName are what the standard verification would
		// use; they are set so that the config says what it trusts.
		RootCAs:    m.roots,
		ServerName: ServerName,
		// The standard verification is replaced by VerifyConnection, which
		// does the same chain and ServerName checks plus the application
		// check: when the standard one fails, VerifyConnection is never
		// called and the refusal could not be reported; and gRPC overwrites
		// ServerName with the dialled authority, which may be a pod IP no
		// certificate holds. VerifyConnection runs on every handshake,
		// resumed ones included, whatever InsecureSkipVerify says.
		InsecureSkipVerify: true,
		VerifyConnection:   m.verifyFunc(remote, onRefuse, verifyServer, role),
	}
}

// side is the peer being verified.
type side struct {
	name  string // for messages
	usage x509.ExtKeyUsage
	dns   string // the DNS name the peer's certificate must hold, if any
}

var (
	verifyClient = side{name: "client", usage: x509.ExtKeyUsageClientAuth}
	verifyServer = side{name: "server", usage: x509.ExtKeyUsageServerAuth, dns: ServerName}
)

// verifyFunc returns a VerifyConnection for connections with remote that
// reports refusals to onRefuse; role, if set, is the one role it accepts.
func (m *material) verifyFunc(remote string, onRefuse func(string, error), peer side, role string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		got, err := m.verify(cs, peer)
		if err == nil && role != "" && got != role {
			err = fmt.Errorf("mtls: %s certificate (%s) is an application's %s, and only its %s may be the %s here",
				peer.name, describe(cs.PeerCertificates[0]), got, role, peer.name)
		}
		if err == nil {
			return nil
		}
		if onRefuse != nil {
			onRefuse(remote, err)
		}
		return refusedError{err}
	}
}

// ErrRefused is in the chain of every handshake error of a peer this
// side's verification refused: retrying cannot help.
var ErrRefused = errors.New("mtls: peer refused")

type refusedError struct{ err error }

func (e refusedError) Error() string        { return e.err.Error() }
func (e refusedError) Unwrap() error        { return e.err }
func (e refusedError) Is(target error) bool { return target == ErrRefused }

// verify checks the peer's certificate: it chains to the application's CA
// alone, is valid now for the peer's side, and names this application. It
// returns the role the certificate names.
func (m *material) verify(cs tls.ConnectionState, peer side) (role string, err error) {
	if len(cs.PeerCertificates) == 0 {
		if peer == verifyClient {
			return "", errNoClientCert
		}
		return "", errors.New("mtls: the server sent no certificate")
	}
	leaf := cs.PeerCertificates[0]
	// A certificate verified before needs only its validity period checked
	// again: the roots and the checks are the same for every connection.
	key := verifiedKey{side: peer.name, der: string(leaf.Raw)}
	if r, ok := m.verified.Load(key); ok {
		if now := time.Now(); !now.Before(leaf.NotBefore) && !now.After(leaf.NotAfter) {
			return r.(string), nil
		}
		m.verified.Delete(key)
	}
	if role, err = m.verifyChain(leaf, peer); err != nil {
		return "", err
	}
	m.verified.Store(key, role)
	return role, nil
}

// PeerRole is the role (RoleDriver or RoleExecutor) that the peer's
// certificate names on a connection that a configuration of this package
// verified. On a resumed connection that certificate is the prepared
// session's: see resume.go for what it proves there.
func PeerRole(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return "", errors.New("mtls: the peer presented no certificate")
	}
	id, err := identity(cs.PeerCertificates[0])
	if err != nil {
		return "", fmt.Errorf("mtls: peer %w", err)
	}
	return id.role, nil
}

// verifyChain is verify's full check of a certificate not verified before;
// it returns the role the certificate names.
func (m *material) verifyChain(leaf *x509.Certificate, peer side) (string, error) {
	opts := x509.VerifyOptions{
		Roots:         m.roots,
		Intermediates: x509.NewCertPool(), // none: the CA signs leaves directly
		DNSName:       peer.dns,
		KeyUsages:     []x509.ExtKeyUsage{peer.usage},
	}
	if _, err := leaf.Verify(opts); err != nil {
		var (
			unknown  x509.UnknownAuthorityError
			invalid  x509.CertificateInvalidError
			hostname x509.HostnameError
		)
		switch {
		case errors.As(err, &unknown):
			return "", fmt.Errorf("mtls: %s certificate not issued by this application's CA (%s): %w", peer.name, describe(leaf), err)
		case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
			return "", fmt.Errorf("mtls: %s certificate (%s) outside its validity period %s to %s: %w",
				peer.name, describe(leaf), leaf.NotBefore.UTC().Format("2006-01-02T15:04:05Z"), leaf.NotAfter.UTC().Format("2006-01-02T15:04:05Z"), err)
		case errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage:
			return "", fmt.Errorf("mtls: %s certificate (%s) not valid for %s authentication: %w", peer.name, describe(leaf), peer.name, err)
		case errors.As(err, &hostname):
			return "", fmt.Errorf("mtls: %s certificate (%s) does not name %s: %w", peer.name, describe(leaf), peer.dns, err)
		default:
			return "", fmt.Errorf("mtls: %s certificate (%s) refused: %w", peer.name, describe(leaf), err)
		}
	}
	id, err := identity(leaf)
	if err != nil {
		return "", fmt.Errorf("mtls: %s %w", peer.name, err)
	}
	if id.app != m.appID {
		return "", fmt.Errorf("mtls: %s certificate names application %q (%s), want %q", peer.name, id.app, describe(leaf), m.appID)
	}
	if id.role != RoleDriver && id.role != RoleExecutor {
		return "", fmt.Errorf("mtls: %s certificate names unknown role %q (%s)", peer.name, id.role, describe(leaf))
	}
	return id.role, nil
}

// ServerCredentials is ServerConfig as gRPC server credentials.
func (b Bundle) ServerCredentials(onRefuse func(remote string, err error)) (credentials.TransportCredentials, error) {
	l, err := b.Load()
	if err != nil {
		return nil, err
	}
	return l.ServerCredentials(onRefuse), nil
}

// ServerCredentials is Bundle.ServerCredentials.
func (l *Loaded) ServerCredentials(onRefuse func(remote string, err error)) credentials.TransportCredentials {
	return credentials.NewTLS(l.ServerConfig(onRefuse))
}

// DialCredentials is ClientConfig as gRPC dial credentials, which report the
// address of a refused server to onRefuse. Servers are verified against
// ServerName whatever the channel's authority (the dialled address, unless
// grpc.WithAuthority says otherwise).
func (b Bundle) DialCredentials(onRefuse func(remote string, err error)) (credentials.TransportCredentials, error) {
	l, err := b.Load()
	if err != nil {
		return nil, err
	}
	return l.DialCredentials(onRefuse), nil
}

// DialCredentials is Bundle.DialCredentials.
func (l *Loaded) DialCredentials(onRefuse func(remote string, err error)) credentials.TransportCredentials {
	return &dialCreds{m: l.m, onRefuse: onRefuse, role: l.peerRole}
}

// dialCreds builds each connection's config with the dialled address, which
// is known only here.
type dialCreds struct {
	m        *material
	onRefuse func(string, error)
	role     string // the one role of server accepted, if set
}

func (d *dialCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	cfg := d.m.clientConfig(raw.RemoteAddr().String(), d.onRefuse, d.role)
	return credentials.NewTLS(cfg).ClientHandshake(ctx, authority, raw)
}

func (d *dialCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("mtls: dial credentials used by a server (use ServerCredentials)")
}

func (d *dialCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (d *dialCreds) Clone() credentials.TransportCredentials {
	c := *d
	return &c
}

// OverrideServerName is ignored: servers are always verified against
// ServerName. (gRPC has deprecated the method.)
func (d *dialCreds) OverrideServerName(string) error { return nil }
