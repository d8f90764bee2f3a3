package logging

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTail(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb"},
		{"", 3, ""},
		{"a\n", 0, ""},
	}
	var got, want []string
	for _, tt := range tests {
		got = append(got, Tail(tt.in, tt.n))
		want = append(want, tt.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tail (-want +got):\n%s", diff)
	}
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte(strings.Repeat("x\n", 100000)+"last\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := TailFile(path, 2); got != "x\nlast" {
		t.Errorf("TailFile = %q, want the last two lines", got)
	}
	if got := TailFile(filepath.Join(t.TempDir(), "none"), 2); !strings.Contains(got, "no such file") {
		t.Errorf("TailFile of a missing file = %q, want the error", got)
	}
}
