package envvar_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeclaredOnce fails when a DROVER_ variable's name is spelt out in
// product code outside this package: each is declared here once.
func TestDeclaredOnce(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "grep", "-n", `"DROVER_[A-Z_]*"`, "--", "*.go",
		":!*_test.go", ":!internal/envvar/", ":!hack/").CombinedOutput()
	if err != nil && len(out) > 0 && !strings.Contains(string(out), ":") {
		t.Fatalf("git grep: %v\n%s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("environment variable names spelt out outside internal/envvar:\n%s", s)
	}
}
