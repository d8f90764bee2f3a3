package procnode

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/logging"
)

func TestTailLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb\n"},
		{"a\nb\n", 0, ""},
		{"", 3, ""},
	} {
		if got := string(logging.LastLines([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("LastLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestLookPath(t *testing.T) {
	if p, err := lookPath("sh", "/nonexistent:/bin:/usr/bin"); err != nil || !strings.HasSuffix(p, "/sh") {
		t.Errorf("lookPath(sh) = %q, %v", p, err)
	}
	if _, err := lookPath("sh", ""); err == nil || !strings.Contains(err.Error(), "executable file not found in $PATH") {
		t.Errorf("lookPath with empty PATH: %v", err)
	}
	if _, err := lookPath("/etc/hostname-nope", ""); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("lookPath of a missing path: %v", err)
	}
	if _, err := lookPath("/etc", ""); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("lookPath of a directory: %v", err)
	}
}
