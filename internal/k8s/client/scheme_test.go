package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWrongScheme: a master URL whose scheme the server does not speak
// fails with one error that says which scheme to use.
func TestWrongScheme(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	tlsServer := httptest.NewUnstartedServer(ok)
	tlsServer.Config.ErrorLog = nil
	tlsServer.StartTLS()
	defer tlsServer.Close()
	plain := httptest.NewServer(ok)
	defer plain.Close()
	tlsHost, plainHost := strings.TrimPrefix(tlsServer.URL, "https://"), strings.TrimPrefix(plain.URL, "http://")
	for _, tc := range []struct{ server, want string }{
		{"http://" + tlsHost, "expects TLS: use k8s://https://" + tlsHost},
		{"https://" + plainHost, "speaks plain HTTP, not TLS: use k8s://http://" + plainHost},
	} {
		t.Setenv("KUBECONFIG", t.TempDir()+"/none")
		cs, err := New(Options{APIServers: []string{tc.server}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().Pods("x").List(context.Background(), metav1.ListOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.server, err, tc.want)
		}
	}
}
