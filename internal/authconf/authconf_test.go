package authconf_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/authconf"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/rpc"
)

// mode names how an Auth proves the application: "tls", "token" or
// "none".
func mode(a rpc.Auth) string {
	if _, ok := a.TLS(); ok {
		return "tls"
	}
	if a.Secret != "" {
		return "token"
	}
	return "none"
}

// TestSecurity: the configuration, with the master's defaults, decides how
// the processes authenticate, and master.NewSecurity makes the matching
// credentials for both sides.
func TestSecurity(t *testing.T) {
	k8s := master.URL{Kind: master.Kubernetes, APIServer: "https://127.0.0.1:6443"}
	cluster := master.URL{Kind: master.LocalCluster, Executors: 2, CoresPerExecutor: 1, MemoryMiB: 512}
	local := master.URL{Kind: master.Local, Threads: 2}
	testCases := map[string]struct {
		m       master.URL
		pairs   []string
		want    string // mode of both sides
		wantErr string
	}{
		"kubernetes: mutual TLS by default":     {m: k8s, want: "tls"},
		"kubernetes: encryption off, for debug": {m: k8s, pairs: []string{"spark.network.crypto.enabled=false"}, want: "token"},
		"kubernetes: authentication off":        {m: k8s, pairs: []string{"spark.authenticate=false"}, want: "none"},
		"local-cluster: token by default":       {m: cluster, want: "token"},
		"local-cluster: TLS on request":         {m: cluster, pairs: []string{"spark.network.crypto.enabled=true"}, want: "tls"},
		"local-cluster: off":                    {m: cluster, pairs: []string{"spark.authenticate=false"}, want: "none"},
		"local: nothing to authenticate":        {m: local, want: "none"},
		"a given secret is used":                {m: cluster, pairs: []string{"spark.authenticate.secret=given"}, want: "token"},
		"encryption without authentication": {m: k8s, pairs: []string{"spark.authenticate=false", "spark.network.crypto.enabled=true"},
			wantErr: "spark.network.crypto.enabled=true needs spark.authenticate=true"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			conf := config.New()
			for _, kv := range tc.pairs {
				k, v, _ := strings.Cut(kv, "=")
				conf.Set(k, v)
			}
			o, err := authconf.Security(conf, tc.m)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, config.ErrInvalid) {
					t.Fatalf("error %v, want an invalid-configuration error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sec, err := master.NewSecurity("drover-0123456789abcdef", o, tc.m, time.Now(), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.want, tc.want}, []string{mode(sec.Driver), mode(sec.Executors)}); diff != "" {
				t.Errorf("driver, executors (-want +got):\n%s", diff)
			}
			if name == "a given secret is used" && sec.Executors.Secret != "given" {
				t.Errorf("executors' secret %q, want the configured one", sec.Executors.Secret)
			}
			if tc.want == "tls" {
				d, _ := sec.Driver.TLS()
				e, _ := sec.Executors.TLS()
				if string(d.CACertPEM) != string(e.CACertPEM) || string(d.CertPEM) == string(e.CertPEM) {
					t.Error("the driver and executors must share one authority and hold different certificates")
				}
			}
		})
	}
}
