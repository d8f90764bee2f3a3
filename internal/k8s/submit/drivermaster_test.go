package submit

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/config"
)

// TestAPIServerFailoverDriverMaster: a cluster-mode driver reaches the API
// through spark.kubernetes.driver.master (the kubernetes Service) and,
// when the user listed several API servers, through them after it.
func TestAPIServerFailoverDriverMaster(t *testing.T) {
	for _, tc := range []struct {
		name, driverMaster string
		apis               []string
		want, wantErr      string
	}{
		{name: "one API server", apis: []string{"https://a:6443"}, want: "k8s://https://kubernetes.default.svc"},
		{name: "a list", apis: []string{"https://a:6443", "https://b:6443"},
			want: "k8s://https://kubernetes.default.svc,https://a:6443,https://b:6443"},
		{name: "the Service listed too", apis: []string{"https://kubernetes.default.svc", "https://b:6443"},
			want: "k8s://https://kubernetes.default.svc,https://b:6443"},
		{name: "driver master with a path", driverMaster: "https://proxy/k8s", apis: []string{"https://a:6443", "https://b:6443"},
			wantErr: "spark.kubernetes.driver.master=https://proxy/k8s with the API servers https://a:6443,https://b:6443"},
		{name: "driver master over http", driverMaster: "http://proxy:8080", apis: []string{"https://a:6443", "https://b:6443"},
			wantErr: "the list mixes http and https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := config.New()
			if tc.driverMaster != "" {
				conf.Set(config.KubernetesDriverMaster.Key(), tc.driverMaster)
			}
			got, err := driverMasterURL(conf, tc.apis)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("driverMasterURL = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
