package mtls

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
)

// Channel proofs: the driver signs each control connection's exported
// keying material (RFC 8446 §7.5) with its own key, and executors check the
// signature before they take anything from the connection. A resumed
// connection shows the driver's certificate from the session, which every
// holder of the executors' Secret can serve (resume.go); the signature is
// what only the driver's key can make. The keying material is the
// connection's own (fresh key exchange and randoms), so a signature made
// for one connection, relayed by a man in the middle, proves nothing on
// another. It costs the driver one ECDSA signature per executor connection
// and the executor one verification.

// channelLabel names drover's use of the exported keying material.
const channelLabel = "EXPORTER-drover-control-driver"

// channelDigest is what a channel proof signs.
func channelDigest(cs tls.ConnectionState) ([]byte, error) {
	ekm, err := cs.ExportKeyingMaterial(channelLabel, nil, 32)
	if err != nil {
		return nil, fmt.Errorf("mtls: exporting the connection's keying material: %w", err)
	}
	d := sha256.Sum256(ekm)
	return d[:], nil
}

// SignChannel signs the connection cs with this process's key: the
// driver's proof, on a connection an executor may have resumed, that it is
// the driver.
func (l *Loaded) SignChannel(cs tls.ConnectionState) ([]byte, error) {
	d, err := channelDigest(cs)
	if err != nil {
		return nil, err
	}
	signer, ok := l.m.cert.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("mtls: the bundle's key cannot sign")
	}
	return signer.Sign(rand.Reader, d, crypto.SHA256)
}

// CheckChannel checks sig, the server's SignChannel of cs, against the
// certificate the server showed, which must name role: on a resumed
// connection only the signature proves that the server holds that
// certificate's key. A failure is ErrRefused.
func (l *Loaded) CheckChannel(cs tls.ConnectionState, sig []byte, role string) error {
	refuse := func(format string, args ...any) error {
		return refusedError{fmt.Errorf("mtls: the server is not this application's "+role+": "+format, args...)}
	}
	got, err := PeerRole(cs)
	switch {
	case err != nil:
		return refuse("%v", err)
	case got != role:
		return refuse("its certificate names %s", got)
	case len(sig) == 0:
		return refuse("it sent no proof of its key")
	}
	pub, ok := cs.PeerCertificates[0].PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return refuse("its certificate's key is not ECDSA")
	}
	d, err := channelDigest(cs)
	if err != nil {
		return refuse("%v", err)
	}
	if !ecdsa.VerifyASN1(pub, d, sig) {
		return refuse("its proof was not made with its certificate's key")
	}
	return nil
}
