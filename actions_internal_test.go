package drover

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitPartsRejectsPaths: a partition file name from an executor
// that is a path fails the commit, and moves nothing.
func TestCommitPartsRejectsPaths(t *testing.T) {
	for _, name := range []string{"../victim", "..", ".", "", "a/b", `a\\b`, "/etc/passwd"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			attempts, staging := filepath.Join(root, "staging", "_temporary"), filepath.Join(root, "staging")
			if err := os.MkdirAll(attempts, 0o755); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(staging, "victim")
			if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(attempts, "good"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := commitParts(attempts, staging, []string{"good", name})
			if err == nil || !strings.Contains(err.Error(), "partition 1") {
				t.Fatalf("commitParts with %q: %v, want an error naming partition 1", name, err)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Errorf("the file outside the attempts directory moved: %v", err)
			}
			if _, err := os.Stat(filepath.Join(staging, "part-00000")); err == nil {
				t.Error("a partition was committed although another's name was bad")
			}
		})
	}
}
