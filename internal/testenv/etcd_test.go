//go:build integration

package testenv_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/testenv"
)

// TestHardeningEtcdRequiresClientCertificates: etcd's client and peer
// listeners refuse whoever lacks the API server's client certificate:
// plaintext HTTP, TLS without a certificate, and a certificate from
// another authority. Without that, any local user could read and write
// the cluster's objects in etcd and so be cluster admin.
func TestHardeningEtcdRequiresClientCertificates(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	// The API server reaches etcd with its certificate.
	if _, err := e.Client.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("the API server cannot use etcd: %v", err)
	}

	stranger := strangerCertificate(t)
	clients := map[string]*http.Client{
		"plaintext":                         {Timeout: 5 * time.Second},
		"TLS without a certificate":         tlsClient(nil),
		"TLS with another CA's certificate": tlsClient(&stranger),
	}
	// What an intruder would do: read the cluster's objects (etcd's JSON
	// gateway; "/registry" in base64) from the client listener, and list
	// the members from the peer listener.
	const rangeBody = `{"key":"L3JlZ2lzdHJ5","range_end":"L3JlZ2lzdHJ6","keys_only":true,"limit":1}`
	for what, c := range clients {
		for _, target := range []struct{ listener, method, url, body string }{
			{"client", http.MethodPost, e.EtcdURL + "/v3/kv/range", rangeBody},
			{"client", http.MethodGet, e.EtcdURL + "/metrics", ""},
			{"peer", http.MethodGet, e.EtcdPeerURL + "/members", ""},
		} {
			url := target.url
			if what == "plaintext" {
				url = "http://" + strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
			}
			req, err := http.NewRequestWithContext(t.Context(), target.method, url, strings.NewReader(target.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Logf("%s to the %s listener (%s %s): refused: %v", what, target.listener, target.method, url, err)
				continue
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				t.Errorf("%s to etcd's %s listener: %s %s answered %s: %.200s", what, target.listener, target.method, url, resp.Status, body)
			} else {
				t.Logf("%s to the %s listener (%s %s): %s", what, target.listener, target.method, url, resp.Status)
			}
		}
	}

	// Keys are for this user only, in a directory for this user only.
	checkMode(t, e.Dir, 0o700)
	keys, _ := filepath.Glob(filepath.Join(e.Dir, "etcd*.key"))
	if len(keys) == 0 {
		t.Errorf("no etcd key files in %s", e.Dir)
	}
	for _, k := range keys {
		checkMode(t, k, 0o600)
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != want {
		t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
	}
}

// tlsClient is a TLS client that trusts any server and presents cert.
func tlsClient(cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{InsecureSkipVerify: true} // the intruder does not care whom it talks to
	if cert != nil {
		// Sent whatever authorities the server names (Certificates would
		// send none that none of them signed).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// strangerCertificate is a self-signed client certificate: an authority
// etcd does not trust.
func strangerCertificate(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kube-apiserver-etcd-client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
