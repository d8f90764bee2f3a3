package mtls

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

const (
	pemCertificate = "CERTIFICATE"
	pemPrivateKey  = "PRIVATE KEY"
)

// Bundle is what one process needs to take part in its application's mutual
// TLS: the application's CA certificate, which is the only thing it trusts,
// and its own certificate and private key. All fields are PEM.
//
// A Bundle holds a private key: String and GoString leave the key out so that
// logging one by accident does not leak it.
type Bundle struct {
	AppID     string
	CACertPEM []byte // the application's CA certificate
	CertPEM   []byte // this process's certificate chain, leaf first
	KeyPEM    []byte // this process's private key, PKCS#8 "PRIVATE KEY"
	// SessionPEM, if set, is a TLS session with the driver for executors to
	// resume (Loaded.PrepareSession): as secret as the key.
	SessionPEM []byte
}

// Encode returns the bundle as one PEM file (CA certificate, certificate
// chain, private key, session if any): the form stored in a Kubernetes
// Secret key and passed in an environment variable.
func (b Bundle) Encode() []byte {
	out := make([]byte, 0, len(b.CACertPEM)+len(b.CertPEM)+len(b.KeyPEM)+len(b.SessionPEM))
	out = append(out, b.CACertPEM...)
	out = append(out, b.CertPEM...)
	out = append(out, b.KeyPEM...)
	return append(out, b.SessionPEM...)
}

// Decode parses a PEM file made by Encode and checks it before anything uses
// it, so that a broken Secret fails at start-up with the reason rather than
// as refused connections: it must hold exactly one CA certificate, a
// certificate signed by that CA and the matching private key, all naming
// application appID. Validity periods are not checked here; the handshake
// checks them against the clock of the moment.
func Decode(appID string, data []byte) (Bundle, error) {
	if err := checkAppID(appID); err != nil {
		return Bundle{}, fmt.Errorf("mtls: decode bundle: %w", err)
	}
	m, err := parse(appID, data)
	if err != nil {
		return Bundle{}, err
	}
	return (&Loaded{m: m}).Bundle(), nil
}

// String names the bundle without its key material.
func (b Bundle) String() string {
	return fmt.Sprintf("mtls.Bundle{AppID: %q, %d bytes of PEM}", b.AppID, len(b.CACertPEM)+len(b.CertPEM)+len(b.KeyPEM)+len(b.SessionPEM))
}

// GoString keeps %#v from printing the key too.
func (b Bundle) GoString() string { return b.String() }

// material is a parsed and checked bundle.
type material struct {
	appID                  string
	ca                     *x509.Certificate
	roots                  *x509.CertPool // the application's CA and nothing else
	cert                   tls.Certificate
	caPEM, certPEM, keyPEM []byte
	// session and sessionPEM are the bundle's session, if any, which a
	// client resumes with the driver (ResumingClientConfig).
	session    *tls.ClientSessionState
	sessionPEM []byte
	// prepared is the session a server resumes (PrepareSession), if any.
	prepared atomic.Pointer[session]
	// verified holds the peer certificates that passed verify, by side and
	// DER: all executors of an application present the same certificate,
	// and a driver verifying its chain again for each of thousands cost a
	// tenth of a millisecond of CPU a connection. Only the application's
	// own certificates get in, so it stays as small as what its CA issued.
	verified sync.Map // verifiedKey → the role the certificate names
}

type verifiedKey struct {
	side string
	der  string
}

// load parses and checks b; see Decode.
func (b Bundle) load() (*material, error) {
	if err := checkAppID(b.AppID); err != nil {
		return nil, fmt.Errorf("mtls: bundle: %w", err)
	}
	return parse(b.AppID, b.Encode())
}

// parse reads the PEM blocks of data, telling the CA certificate from the
// process's own by the CA flag rather than by order, and checks them.
func parse(appID string, data []byte) (*material, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("mtls: decode bundle: empty input (want PEM blocks: the CA certificate, this process's certificate and its private key)")
	}
	var (
		m      = &material{appID: appID}
		chain  []*x509.Certificate
		key    crypto.Signer
		blocks int
	)
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		blocks++
		switch block.Type {
		case pemCertificate:
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("mtls: decode bundle: certificate %d: %w", blocks, err)
			}
			if cert.IsCA {
				if m.ca != nil {
					return nil, fmt.Errorf("mtls: decode bundle: more than one CA certificate (%s and %s)", describe(m.ca), describe(cert))
				}
				m.ca = cert
				m.caPEM = pem.EncodeToMemory(block)
				continue
			}
			chain = append(chain, cert)
			m.certPEM = append(m.certPEM, pem.EncodeToMemory(block)...)
		case pemPrivateKey:
			if key != nil {
				return nil, errors.New("mtls: decode bundle: more than one private key")
			}
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("mtls: decode bundle: private key: %w", err)
			}
			signer, ok := k.(crypto.Signer)
			if !ok {
				return nil, fmt.Errorf("mtls: decode bundle: private key of type %T cannot sign", k)
			}
			key = signer
			m.keyPEM = pem.EncodeToMemory(block)
		case pemSession:
			if m.session != nil {
				return nil, errors.New("mtls: decode bundle: more than one TLS session")
			}
			var err error
			if m.session, err = parseSession(block.Bytes); err != nil {
				return nil, err
			}
			m.sessionPEM = pem.EncodeToMemory(block)
		default:
			return nil, fmt.Errorf("mtls: decode bundle: unexpected PEM block %q (want %q, PKCS#8 %q or %q)", block.Type, pemCertificate, pemPrivateKey, pemSession)
		}
	}
	switch {
	case blocks == 0:
		return nil, errors.New("mtls: decode bundle: no PEM blocks found")
	case m.ca == nil:
		return nil, errors.New("mtls: decode bundle: no CA certificate")
	case len(chain) == 0:
		return nil, errors.New("mtls: decode bundle: no certificate for this process (only the CA's)")
	case key == nil:
		return nil, fmt.Errorf("mtls: decode bundle: no private key (PEM block %q)", pemPrivateKey)
	}
	leaf := chain[0]

	if err := m.ca.CheckSignatureFrom(m.ca); err != nil {
		return nil, fmt.Errorf("mtls: decode bundle: the CA certificate (%s) is not self-signed: %w", describe(m.ca), err)
	}
	if id, err := identity(m.ca); err != nil || id.app != appID || id.role != "" {
		return nil, wrongApp("the CA certificate", m.ca, appID, err)
	}
	if !bytes.Equal(leaf.RawIssuer, m.ca.RawSubject) {
		return nil, fmt.Errorf("mtls: decode bundle: the certificate (%s) is not issued by the bundle's CA (%s): issued by %q",
			describe(leaf), describe(m.ca), leaf.Issuer.String())
	}
	if err := leaf.CheckSignatureFrom(m.ca); err != nil {
		return nil, fmt.Errorf("mtls: decode bundle: the certificate (%s) is not signed by the bundle's CA (%s): %w", describe(leaf), describe(m.ca), err)
	}
	if id, err := identity(leaf); err != nil || id.app != appID || id.role == "" {
		return nil, wrongApp("the certificate", leaf, appID, err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(leaf.PublicKey) {
		return nil, fmt.Errorf("mtls: decode bundle: the private key does not match the certificate (%s)", describe(leaf))
	}

	m.roots = x509.NewCertPool()
	m.roots.AddCert(m.ca)
	m.cert = tls.Certificate{PrivateKey: key, Leaf: leaf}
	for _, c := range chain {
		m.cert.Certificate = append(m.cert.Certificate, c.Raw)
	}
	return m, nil
}

// wrongApp explains why cert does not identify application appID.
func wrongApp(what string, cert *x509.Certificate, appID string, err error) error {
	if err != nil {
		return fmt.Errorf("mtls: decode bundle: %s: %w", what, err)
	}
	id, _ := identity(cert)
	if id.app != appID {
		return fmt.Errorf("mtls: decode bundle: the bundle is for application %q (%s names %s), want %q", id.app, what, describe(cert), appID)
	}
	return fmt.Errorf("mtls: decode bundle: %s names %s, which is not a valid identity for it", what, describe(cert))
}

// peerID is the application and role a certificate's URI SAN names; role is
// empty for a CA.
type peerID struct{ app, role string }

// identity reads the drover identity from cert's URI SANs. Exactly one is
// allowed, so that a certificate cannot name two applications.
func identity(cert *x509.Certificate) (peerID, error) {
	var found []string
	var id peerID
	for _, u := range cert.URIs {
		if u.Scheme != uriScheme {
			continue
		}
		found = append(found, u.String())
		rest, ok := strings.CutPrefix(u.Path, "/")
		if u.Host != uriHost || !ok || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return peerID{}, fmt.Errorf("malformed drover identity %s (want %s://%s/<appID>[/<role>])", u, uriScheme, uriHost)
		}
		id.app, id.role, _ = strings.Cut(rest, "/")
		if id.app == "" || strings.Contains(id.role, "/") {
			return peerID{}, fmt.Errorf("malformed drover identity %s (want %s://%s/<appID>[/<role>])", u, uriScheme, uriHost)
		}
	}
	switch len(found) {
	case 0:
		return peerID{}, fmt.Errorf("certificate %s carries no drover identity (no %s://%s/... URI SAN)", describe(cert), uriScheme, uriHost)
	case 1:
		return id, nil
	default:
		return peerID{}, fmt.Errorf("certificate names more than one drover identity (%s)", strings.Join(found, ", "))
	}
}

// describe names a certificate in messages: by its URI SANs, which are what
// identify drover processes, or by its subject if it has none.
func describe(cert *x509.Certificate) string {
	if len(cert.URIs) > 0 {
		s := make([]string, len(cert.URIs))
		for i, u := range cert.URIs {
			s[i] = u.String()
		}
		return strings.Join(s, ", ")
	}
	if subject := cert.Subject.String(); subject != "" {
		return "subject " + subject
	}
	return "certificate without subject or URI"
}
