package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestOperatorInstallDryRun prints the operator's objects without a
// cluster: the CRDs, its account and rights, the Deployment, and drover
// rbac's driver account in the namespace asked for.
func TestOperatorInstallDryRun(t *testing.T) {
	root := NewRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"operator", "install", "--dry-run", "--namespace", "ops", "--image", "registry.example/drover:1",
		"--driver-namespace", "spark"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	y := out.String()
	for _, want := range []string{"kind: CustomResourceDefinition", "name: droverapplications.drover.io",
		"kind: ClusterRole", "kind: Deployment", "image: registry.example/drover:1", "--leader-election-namespace=ops",
		"kind: Role\n", "coordination.k8s.io", "name: drover-driver", "namespace: spark"} {
		if !strings.Contains(y, want) {
			t.Errorf("install --dry-run lacks %q", want)
		}
	}
}
