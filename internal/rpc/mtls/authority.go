package mtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"time"
)

// ServerName is the DNS name in every leaf certificate and the name clients
// verify. Servers are reached by pod IP, which no certificate holds; a fixed
// name under the reserved .invalid TLD keeps hostname verification
// meaningful (it is what ties the certificate to server use) without
// resolving to anything.
const ServerName = "drover.invalid"

// Roles a certificate can be issued for. Every process both serves and
// dials, so the role names the process, not the direction.
const (
	RoleDriver   = "driver"
	RoleExecutor = "executor"
)

// DefaultValidity is how long certificates stay valid after NewAuthority.
// The CA key is gone once the driver has issued its bundles, so nothing can
// be renewed: this must outlast the application.
const DefaultValidity = 30 * 24 * time.Hour

// clockSkew backdates NotBefore so that a node whose clock is a little behind
// the driver's still accepts fresh certificates.
const clockSkew = time.Hour

// uriScheme and uriHost form the URI SANs: drover://app/<appID> for the CA,
// drover://app/<appID>/<role> for a leaf.
const (
	uriScheme = "drover"
	uriHost   = "app"
)

// Authority is one application's certificate authority. It holds the CA
// private key in memory only: the driver creates it at start-up, issues its
// own bundle and the executors' bundle, and then discards it, so no CA key is
// ever written to disk, a Secret, or an environment variable. It is safe for
// concurrent use.
type Authority struct {
	appID   string
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
}

// NewAuthority creates the CA of application appID: an ECDSA P-256 key and a
// self-signed certificate valid from now-1h to now+DefaultValidity that can
// sign leaf certificates but no further CAs.
func NewAuthority(appID string, now time.Time) (*Authority, error) {
	if err := checkAppID(appID); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("mtls: generate CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "drover application " + appID},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(DefaultValidity),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true, // leaves only: a stolen leaf key cannot mint certificates
		URIs:                  []*url.URL{identityURI(appID, "")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("mtls: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("mtls: parse CA certificate: %w", err)
	}
	return &Authority{
		appID:   appID,
		cert:    cert,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}),
		key:     key,
	}, nil
}

// Issue creates a key and a certificate for a process of the application in
// role (RoleDriver or RoleExecutor). The certificate allows both server and
// client authentication because every process both serves and dials; it has
// the CA's validity period.
func (a *Authority) Issue(role string) (Bundle, error) {
	if role != RoleDriver && role != RoleExecutor {
		return Bundle{}, fmt.Errorf("mtls: issue: unknown role %q (want %q or %q)", role, RoleDriver, RoleExecutor)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, fmt.Errorf("mtls: generate %s key: %w", role, err)
	}
	serial, err := serialNumber()
	if err != nil {
		return Bundle{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "drover " + role + " of application " + a.appID},
		NotBefore:             a.cert.NotBefore,
		NotAfter:              a.cert.NotAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{ServerName},
		URIs:                  []*url.URL{identityURI(a.appID, role)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return Bundle{}, fmt.Errorf("mtls: create %s certificate: %w", role, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Bundle{}, fmt.Errorf("mtls: encode %s key: %w", role, err)
	}
	return Bundle{
		AppID:     a.appID,
		CACertPEM: a.certPEM,
		CertPEM:   pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}),
		KeyPEM:    pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: keyDER}),
	}, nil
}

// serialNumber returns a random serial in [1, 2^128]: unpredictable, as
// RFC 5280 recommends, and never zero.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("mtls: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// identityURI is drover://app/<appID>, or drover://app/<appID>/<role> when
// role is set.
func identityURI(appID, role string) *url.URL {
	p := "/" + appID
	if role != "" {
		p += "/" + role
	}
	return &url.URL{Scheme: uriScheme, Host: uriHost, Path: p}
}

// checkAppID keeps the application ID to characters that need no escaping in
// a URI path (it is also a Kubernetes label value), so that the identity in a
// certificate compares as plain text.
func checkAppID(appID string) error {
	if appID == "" {
		return fmt.Errorf("mtls: empty application ID")
	}
	for _, r := range appID {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_'
		if !ok {
			return fmt.Errorf("mtls: application ID %q: only letters, digits, '-', '.' and '_' are allowed", appID)
		}
	}
	return nil
}
