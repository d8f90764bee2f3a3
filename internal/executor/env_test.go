package executor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
)

// TestOptionsFromConfDir: an executor reads the timeouts it needs before
// registering from the executor ConfigMap's spark-defaults.conf in
// $DROVER_CONF_DIR, or from where a process node put the volume.
func TestOptionsFromConfDir(t *testing.T) {
	mounted := t.TempDir()
	props := "# written by the driver\nspark.network.timeout=45s\nspark.executor.heartbeatInterval=3s\nspark.app.name=x\n"
	if err := os.WriteFile(filepath.Join(mounted, config.DefaultsFile), []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, config.DefaultsFile), []byte("spark.network.timeout=soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type timeouts struct{ Network, Heartbeat time.Duration }
	tests := map[string]struct {
		env     map[string]string
		want    timeouts
		wantErr bool
	}{
		"no conf dir: the executor's defaults apply later": {env: map[string]string{}},
		"mounted at DROVER_CONF_DIR": {env: map[string]string{envvar.ConfDir: mounted},
			want: timeouts{45 * time.Second, 3 * time.Second}},
		"process node: the volume's directory": {env: map[string]string{envvar.ConfDir: "/opt/drover/conf", envvar.ConfVolume: mounted},
			want: timeouts{45 * time.Second, 3 * time.Second}},
		"no file (config map disabled)": {env: map[string]string{envvar.ConfDir: t.TempDir()}},
		"invalid value":                 {env: map[string]string{envvar.ConfDir: bad}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{envvar.DriverURL: "10.0.0.1:7078", envvar.AppID: "app", envvar.ExecutorID: "1"}
			for k, v := range tc.env {
				env[k] = v
			}
			o, err := OptionsFromEnv(func(k string) string { return env[k] })
			if (err != nil) != tc.wantErr {
				t.Fatalf("OptionsFromEnv() error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, timeouts{o.NetworkTimeout, o.HeartbeatInterval}); diff != "" && !tc.wantErr {
				t.Errorf("timeouts (-want +got):\n%s", diff)
			}
		})
	}
}
