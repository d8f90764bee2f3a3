package k8sconf

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestCLIDoesNotLinkTheClusterManager: drover submit checks the
// configuration with this package, so the CLI does not link the driver's
// cluster manager (package internal/k8s), directly or through submit.
func TestCLIDoesNotLinkTheClusterManager(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	const mod = "github.com/drover-project/drover/"
	for _, pkg := range []string{"internal/cli", "internal/k8s/submit"} {
		out, err := exec.Command(gobin, "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		if slices.Contains(strings.Fields(string(out)), mod+"internal/k8s") {
			t.Errorf("%s links %sinternal/k8s, the driver's cluster manager", pkg, mod)
		}
	}
}
