package k8sconf

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/master"
)

// TestAPIServerFailoverList: the API servers come from
// spark.kubernetes.apiserver.host or the master URL; a bad or
// contradicting list is a configuration error naming the setting.
func TestAPIServerFailoverList(t *testing.T) {
	parse := func(s string) master.URL {
		m, err := master.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for name, tc := range map[string]struct {
		master  string // "" for none (the kubeconfig's)
		key     string
		want    []string
		wantErr string
	}{
		"neither":                  {},
		"master alone":             {master: "k8s://https://a:6443,https://b:6443", want: []string{"https://a:6443", "https://b:6443"}},
		"key alone":                {key: "https://a:6443, https://b:6443", want: []string{"https://a:6443", "https://b:6443"}},
		"both, the same":           {master: "k8s://a:6443,b:6443", key: "https://a:6443,https://b:6443", want: []string{"https://a:6443", "https://b:6443"}},
		"both, spelt differently":  {master: "k8s://https://A.example:6443/", key: "https://a.example:6443", want: []string{"https://a.example:6443"}},
		"key with a duplicate":     {key: "https://a:6443,https://a:6443", wantErr: "spark.kubernetes.apiserver.host=https://a:6443,https://a:6443: API server 2 of the list (https://a:6443) repeats API server 1"},
		"key with a bad scheme":    {key: "https://a:6443,ftp://b", wantErr: `spark.kubernetes.apiserver.host=https://a:6443,ftp://b: API server 2 of the list (ftp://b): the Kubernetes API server scheme "ftp" is not http or https`},
		"key mixing schemes":       {key: "http://a:8080,https://b:6443", wantErr: "spark.kubernetes.apiserver.host=http://a:8080,https://b:6443: the list mixes http and https"},
		"key contradicts master":   {master: "k8s://https://a:6443", key: "https://a:6443,https://b:6443", wantErr: "spark.kubernetes.apiserver.host=https://a:6443,https://b:6443 contradicts the master URL k8s://https://a:6443"},
		"key in another order":     {master: "k8s://https://b:6443,https://a:6443", key: "https://a:6443,https://b:6443", wantErr: "contradicts the master URL"},
		"key with an empty member": {key: "https://a:6443,,https://b:6443", wantErr: "API server 2 of the list is empty"},
	} {
		t.Run(name, func(t *testing.T) {
			conf := config.New()
			if tc.key != "" {
				conf.Set(config.KubernetesAPIServerHost.Key(), tc.key)
			}
			var m master.URL
			if tc.master != "" {
				m = parse(tc.master)
			}
			got, err := APIServers(conf, m)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, config.ErrInvalid) {
					t.Fatalf("error %v, want a configuration error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("API servers (-want +got):\n%s", diff)
			}
		})
	}
}
