package appimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GoBuild builds the Go main package pkg, resolved in dir, into out exactly
// as the Dockerfile's build stage does: static (CGO_ENABLED=0), paths
// trimmed and symbols stripped, so that the same sources and toolchain give
// the same bytes. env is added to this process's environment.
func GoBuild(ctx context.Context, dir, pkg, out string, env ...string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return nil
}

// ModuleRoot is the directory of the go.mod of the module the go command
// finds from the current directory: the repository root, where the
// Dockerfile's build context and GoBuild's relative packages start.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not inside a Go module; expected to run in the drover repository")
	}
	return filepath.Dir(gomod), nil
}
