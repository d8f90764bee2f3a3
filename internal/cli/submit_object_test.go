package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

// TestOperatorSubmitAsObject: drover submit --as-object prints the
// DroverApplication of the command line and creates nothing (no API
// server is reachable here). Its spec gives back, through Conf, the
// configuration the user gave, less the controller's keys; bad input
// fails with submit's own errors and exit code, printing no object.
func TestOperatorSubmitAsObject(t *testing.T) {
	t.Setenv("DROVER_CONF_DIR", "")
	t.Setenv("SPARK_CONF_DIR", "")
	template := filepath.Join(t.TempDir(), "executor.yaml")
	if err := os.WriteFile(template, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    team: search\n"+
		"spec:\n  priorityClassName: batch\n  containers:\n  - name: executor\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const image = "spark.kubernetes.container.image=registry.example/wordcount:1.0"
	tests := map[string]struct {
		args          []string
		wantName      string
		wantNamespace string
		// wantConf is what Spec.Conf gives back: the user's settings.
		wantConf     map[string]string
		wantTemplate bool
		wantWarning  string
		wantErr      string
	}{
		"flags, settings and a template": {
			args: []string{"--master", "k8s://https://kube.example:6443", "--deploy-mode", "cluster", "--name", "Word Count",
				"--conf", image, "--conf", "spark.kubernetes.namespace=spark", "--num-executors", "4", "--executor-memory", "2g",
				"--conf", "spark.eventLog.enabled=true", "--conf", "spark.kubernetes.executor.podTemplateFile=" + template,
				"--conf", "spark.dynamicAllocation.maxExecutors=infinity",
				"local:///app/wordcount", "/data/books", "20"},
			wantName: "word-count", wantNamespace: "spark", wantTemplate: true,
			wantConf: map[string]string{
				config.AppName.Key(): "Word Count", config.KubernetesContainerImage.Key(): "registry.example/wordcount:1.0",
				config.ExecutorInstances.Key(): "4", config.ExecutorMemory.Key(): "2g", config.EventLogEnabled.Key(): "true",
				config.DynamicAllocationMaxExecutors.Key(): "infinity",
			},
			wantWarning: "spark.master is left out of the object",
		},
		"no master needed": {
			args:     []string{"--conf", image, "/app/pi", "100"},
			wantName: "pi", wantConf: map[string]string{config.KubernetesContainerImage.Key(): "registry.example/wordcount:1.0"},
		},
		"bad memory": {args: []string{"--conf", image, "--executor-memory", "1.5g", "local:///app/wordcount"},
			wantErr: "invalid value \"1.5g\" for spark.executor.memory"},
		"no image": {args: []string{"local:///app/wordcount"}, wantErr: "no driver image"},
		"an s3 application": {args: []string{"--conf", image, "s3://bucket/wordcount"},
			wantErr: "drover does not upload files"},
		"a secret": {args: []string{"--conf", image, "--conf", "spark.authenticate.secret=hunter2", "local:///app/wordcount"},
			wantErr: "spark.authenticate.secret: secret settings cannot go into an object kept in Git"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := NewRootCommand()
			cmd.SetArgs(append([]string{"submit", "--as-object"}, tt.args...))
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || ExitCode(err) != config.ExitInvalid {
					t.Fatalf("error %v (exit code %d), want one containing %q with exit code %d",
						err, ExitCode(err), tt.wantErr, config.ExitInvalid)
				}
				if stdout.Len() > 0 {
					t.Errorf("printed an object for bad input:\n%s", stdout.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantWarning) {
				t.Errorf("stderr %q does not warn %q", stderr.String(), tt.wantWarning)
			}
			var app v1alpha1.DroverApplication
			if err := yaml.UnmarshalStrict(stdout.Bytes(), &app); err != nil {
				t.Fatalf("the output is no DroverApplication: %v\n%s", err, stdout.String())
			}
			type meta struct{ APIVersion, Kind, Name, Namespace string }
			if diff := cmp.Diff(meta{"drover.io/v1alpha1", "DroverApplication", tt.wantName, tt.wantNamespace},
				meta{app.APIVersion, app.Kind, app.Name, app.Namespace}); diff != "" {
				t.Errorf("object (-want +got):\n%s", diff)
			}
			conf, err := app.Spec.Conf()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantConf, conf); diff != "" {
				t.Errorf("Spec.Conf() (-want +got):\n%s", diff)
			}
			if got := app.Spec.Executor.PodTemplate != nil; got != tt.wantTemplate {
				t.Errorf("executor pod template carried: %v, want %v", got, tt.wantTemplate)
			} else if got && app.Spec.Executor.PodTemplate.Spec.PriorityClassName != "batch" {
				t.Errorf("executor pod template %+v, want the file's", app.Spec.Executor.PodTemplate)
			}
		})
	}
}
