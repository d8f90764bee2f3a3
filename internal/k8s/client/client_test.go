package client

import (
	"bytes"
	"context"
	"encoding/pem"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/metrics"
)

// TestAPIServerFailoverClient: New with a list whose first API server
// refuses connections lists pods from the second, says once that it left
// the first, and reports the second as the one in use.
func TestAPIServerFailoverClient(t *testing.T) {
	b := newAPIServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"p"}}]}`))
	})
	dead := closedPort(t)
	// httptest's servers share one certificate: one CA serves both, as
	// the instances of one control plane share theirs.
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var log bytes.Buffer
	c, err := New(Options{APIServers: []string{dead, b.URL}, Credentials: Credentials{CACertFile: ca},
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Host() != dead {
		t.Errorf("Host() before any request = %s, want the first, %s", c.Host(), dead)
	}
	pods, err := c.CoreV1().Pods("x").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("listing pods past a refused first API server: %v, %v", pods, err)
	}
	if c.Host() != b.URL || c.ForHost().Host != b.URL {
		t.Errorf("Host() = %s, ForHost().Host = %s, want %s", c.Host(), c.ForHost().Host, b.URL)
	}
	if n := strings.Count(log.String(), "leaving Kubernetes API server"); n != 1 {
		t.Errorf("the client said %d times that it left an API server, want once:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "endpoint="+dead) || !strings.Contains(log.String(), "next="+b.URL) {
		t.Errorf("the line names neither the API server left nor the next:\n%s", log.String())
	}
	// The metrics say which API server is in use, and count the move.
	reg := prometheus.NewRegistry()
	metrics.RegisterKubernetes(reg)
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "," + l.GetValue()
			}
			got[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	if got["drover_kubernetes_api_server,"+b.URL] != 1 || got["drover_kubernetes_api_server,"+dead] != 0 ||
		got["drover_kubernetes_api_failovers_total"] < 1 {
		t.Errorf("metrics after the failover: %v", got)
	}
}

// TestAPIServerFailoverOneServer: a single API server needs no failover,
// and its client has nothing to close.
func TestAPIServerFailoverOneServer(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	c, err := New(Options{APIServers: []string{"https://127.0.0.1:6443"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.failover != nil || c.Host() != "https://127.0.0.1:6443" || c.Close() != nil {
		t.Errorf("one API server: failover %v, Host %s", c.failover, c.Host())
	}
}
