package procnode

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/drover-project/drover/internal/logging"
)

// Logs returns what the first container of the newest pod namespace/name to
// run on this agent's nodes wrote to stdout and stderr, in all its runs when
// it restarted (kubectl logs shows the current run, --previous the one
// before, as with a kubelet). Logs outlive the pod object; they go with the
// agent's directory.
func (a *Agent) Logs(namespace, pod string) ([]byte, error) {
	w := a.worker(namespace, pod)
	if w == nil {
		return nil, fmt.Errorf("no pod %s/%s has run on process nodes %v", namespace, pod, a.cfg.NodeNames)
	}
	return a.ContainerLogs(namespace, pod, w.latest().Spec.Containers[0].Name)
}

// ContainerLogs is Logs for a named container.
func (a *Agent) ContainerLogs(namespace, pod, container string) ([]byte, error) {
	w := a.worker(namespace, pod)
	if w == nil {
		return nil, fmt.Errorf("no pod %s/%s has run on process nodes %v", namespace, pod, a.cfg.NodeNames)
	}
	b, err := os.ReadFile(w.logPath(container))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // not started (yet)
	}
	if err != nil {
		return nil, fmt.Errorf("reading logs of %s/%s container %s: %w", namespace, pod, container, err)
	}
	return b, nil
}

func (a *Agent) worker(namespace, pod string) *podWorker {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byName[namespace+"/"+pod]
}

// serveKubelet starts the part of the kubelet API the API server proxies for
// kubectl logs and port-forward, over TLS on the node IP with a throw-away self-signed
// certificate (the API server doesn't verify kubelet certificates unless told
// to).
func (a *Agent) serveKubelet() (*http.Server, int, error) {
	cert, err := selfSignedCert(a.cfg.NodeIP)
	if err != nil {
		return nil, 0, err
	}
	tlsConf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if a.cfg.ClientCAs != nil {
		tlsConf.ClientCAs = a.cfg.ClientCAs
		tlsConf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(a.cfg.NodeIP, "0"))
	if err != nil {
		return nil, 0, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", a.serveLogs)
	mux.HandleFunc("/portForward/{namespace}/{pod}", a.servePortForward)
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         tlsConf,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelDebug),
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	return srv, ln.Addr().(*net.TCPAddr).Port, nil
}

// serveLogs answers GET /containerLogs/{namespace}/{pod}/{container} with
// the follow, previous, tailLines and limitBytes parameters of the kubelet
// API: the output of the container's current run, or of the run before.
func (a *Agent) serveLogs(rw http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	w := a.worker(ns, name)
	if w == nil {
		http.Error(rw, fmt.Sprintf("pod %s/%s not found on this node", ns, name), http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	follow, _ := strconv.ParseBool(q.Get("follow"))
	previous, _ := strconv.ParseBool(q.Get("previous"))
	from, to, ok := w.runBounds(container, previous)
	followed := w.runCount(container) - 1
	if !ok {
		// The kubelet's words.
		http.Error(rw, fmt.Sprintf("previous terminated container %q in pod %q not found", container, name), http.StatusBadRequest)
		return
	}
	if previous {
		follow = false // that run has ended
	}
	limit, _ := strconv.ParseInt(q.Get("limitBytes"), 10, 64)
	if limit <= 0 {
		limit = 1 << 62
	}
	data, err := os.ReadFile(w.logPath(container))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	offset := int64(len(data)) // where following goes on
	data = run(data, from, to)
	if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n >= 0 {
		data = logging.LastLines(data, n)
	}
	rw.Header().Set("Content-Type", "text/plain")
	sent := int64(0)
	write := func(b []byte) bool {
		if int64(len(b)) > limit-sent {
			b = b[:limit-sent]
		}
		if _, err := rw.Write(b); err != nil {
			return false
		}
		sent += int64(len(b))
		if f, ok := rw.(http.Flusher); ok {
			f.Flush()
		}
		return sent < limit
	}
	if !write(data) || !follow {
		return
	}
	for {
		running := w.running(container)
		// A kubelet's follow ends with the container: a restart is another
		// container, whose output is not this one's.
		end := int64(-1)
		if followed >= 0 {
			end = w.runStart(container, followed+1)
		}
		if end >= 0 {
			running = false
		}
		b, next, err := readFrom(w.logPath(container), offset)
		if end >= 0 && next > end {
			b, next = b[:max(0, end-offset)], max(offset, end)
		}
		if err == nil && len(b) > 0 {
			offset = next
			if !write(b) {
				return
			}
			continue
		}
		if !running {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// run is the part of log data from from to to (to the end if to < 0).
func run(data []byte, from, to int64) []byte {
	if to < 0 || to > int64(len(data)) {
		to = int64(len(data))
	}
	return data[min(from, to):to]
}

func readFrom(p string, off int64) ([]byte, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, off, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, off, err
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(f, 1<<20))
	return buf.Bytes(), off + n, err
}

func selfSignedCert(ip string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "procnode"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
	}
	if parsed := net.ParseIP(ip); parsed != nil {
		tmpl.IPAddresses = []net.IP{parsed}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
