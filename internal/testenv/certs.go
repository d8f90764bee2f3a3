package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// authority is a throw-away CA for one environment: it signs the API
// server's serving certificate and the client certificate the API server
// presents to process nodes.
type authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "drover-testenv-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: encodeCert(der), keyPEM: keyPEM}, nil
}

// issue signs a certificate for a server (hosts: DNS names and IPs) or, when
// hosts is empty, a client named cn in groups orgs.
func (a *authority) issue(cn string, orgs, hosts []string) (certPEM, keyPEM []byte, err error) {
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if len(hosts) > 0 {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	return a.issueFor(cn, orgs, hosts, usage...)
}

// issueFor signs a certificate for cn with the given extended key usages.
func (a *authority) issueFor(cn string, orgs, hosts []string, usage ...x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key for %s: %w", cn, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing certificate for %s: %w", cn, err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCert(der), keyPEM, nil
}

// newSigningKey returns a key pair for service account tokens: the private
// key for --service-account-signing-key-file and the controller-manager, the
// public key for --service-account-key-file.
func newSigningKey() (privPEM, pubPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating service account key: %w", err)
	}
	privPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding service account public key: %w", err)
	}
	return privPEM, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func writeKubeconfig(path, server string, caPEM []byte, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["drover"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["drover"] = &clientcmdapi.Context{Cluster: "drover", AuthInfo: user, Namespace: metav1.NamespaceDefault}
	cfg.CurrentContext = "drover"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// pkiFiles are the credentials of one environment.
type pkiFiles struct {
	caPEM                                              []byte
	caCert, caKey, serverCert, serverKey, saKey, saPub string
	kubeletClientCert, kubeletClientKey, tokens        string
	adminToken, schedulerToken, cmToken, kwokToken     string
	procnodeToken, kueueToken                          string
	etcd                                               etcdPKI
}

// etcdPKI are etcd's credentials. etcd trusts its own authority, whose key
// is never written: kube-controller-manager signs certificate requests with
// the cluster's CA (ca.key), so a client certificate from that CA must not
// open etcd. One certificate serves both of etcd's listeners (clients and
// peers, which are also clients of each other); the API server holds the
// only client certificate.
type etcdPKI struct {
	caPEM                         []byte
	caCert, serverCert, serverKey string
	clientCert, clientKey         string
	clientCertPEM, clientKeyPEM   []byte
}

func writeEtcdPKI(dir string) (etcdPKI, error) {
	ca, err := newAuthority()
	if err != nil {
		return etcdPKI{}, err
	}
	serverCert, serverKey, err := ca.issueFor("etcd", nil, []string{"127.0.0.1", "localhost"},
		x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return etcdPKI{}, err
	}
	clientCert, clientKey, err := ca.issue("kube-apiserver-etcd-client", nil, nil)
	if err != nil {
		return etcdPKI{}, err
	}
	p := etcdPKI{caPEM: ca.certPEM, clientCertPEM: clientCert, clientKeyPEM: clientKey}
	err = writeFiles(dir, []pkiFile{
		{&p.caCert, "etcd-ca.crt", ca.certPEM},
		{&p.serverCert, "etcd-server.crt", serverCert}, {&p.serverKey, "etcd-server.key", serverKey},
		{&p.clientCert, "etcd-client.crt", clientCert}, {&p.clientKey, "etcd-client.key", clientKey},
	})
	return p, err
}

// httpClient is an HTTP client of etcd with the API server's certificate.
func (p etcdPKI) httpClient() (*http.Client, error) {
	cert, err := tls.X509KeyPair(p.clientCertPEM, p.clientKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading etcd's client certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.caPEM)
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}},
	}}, nil
}

// pkiFile is a file of credentials: where its path goes, its name, its data.
type pkiFile struct {
	path *string
	name string
	data []byte
}

// writeFiles writes files into dir, readable by this user only.
func writeFiles(dir string, files []pkiFile) error {
	for _, f := range files {
		*f.path = filepath.Join(dir, f.name)
		if err := os.WriteFile(*f.path, f.data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	return nil
}

func writePKI(dir string) (*pkiFiles, error) {
	ca, err := newAuthority()
	if err != nil {
		return nil, err
	}
	serverCert, serverKey, err := ca.issue("kube-apiserver", nil, []string{
		"127.0.0.1", "localhost", "10.0.0.1",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	})
	if err != nil {
		return nil, err
	}
	// The API server presents this to process nodes' kubelet API (kubectl logs).
	clientCert, clientKey, err := ca.issue("kube-apiserver-kubelet-client", []string{"system:masters"}, nil)
	if err != nil {
		return nil, err
	}
	saKey, saPub, err := newSigningKey()
	if err != nil {
		return nil, err
	}
	p := &pkiFiles{caPEM: ca.certPEM}
	if err := writeFiles(dir, []pkiFile{
		{&p.caCert, "ca.crt", ca.certPEM}, {&p.caKey, "ca.key", ca.keyPEM},
		{&p.serverCert, "apiserver.crt", serverCert}, {&p.serverKey, "apiserver.key", serverKey},
		{&p.kubeletClientCert, "kubelet-client.crt", clientCert}, {&p.kubeletClientKey, "kubelet-client.key", clientKey},
		{&p.saKey, "sa.key", saKey}, {&p.saPub, "sa.pub", saPub},
	}); err != nil {
		return nil, err
	}
	if p.etcd, err = writeEtcdPKI(dir); err != nil {
		return nil, err
	}
	// Every component is in system:masters: they are the cluster's own
	// parts, and their user names show who did what in managed fields.
	var lines []string
	for _, u := range []struct {
		token  *string
		user   string
		groups string
	}{
		{&p.adminToken, "admin", "system:masters"},
		{&p.schedulerToken, "system:kube-scheduler", "system:masters"},
		{&p.cmToken, "system:kube-controller-manager", "system:masters"},
		{&p.kwokToken, "system:kwok", "system:masters"},
		{&p.procnodeToken, "system:node:procnode", "system:nodes,system:masters"},
		{&p.kueueToken, "system:kueue", "system:masters"},
	} {
		*u.token = randomToken()
		lines = append(lines, fmt.Sprintf("%s,%s,%s,%q", *u.token, u.user, u.user, u.groups))
	}
	p.tokens = filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(p.tokens, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("writing the token file: %w", err)
	}
	return p, nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// stalePrefix names environment directories; ownerFile in each holds the PID
// of the process that created it.
const (
	stalePrefix = "drover-testenv-"
	ownerFile   = "owner.pid"
)
