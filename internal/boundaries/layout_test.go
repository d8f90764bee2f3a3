package boundaries

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines bounds a hand-written, non-test Go file: past it, a file holds
// more than one concern and is split by them.
const maxLines = 500

// longFilesAllowed are the files allowed past maxLines: generated code, and
// the REST API's types, which follow Spark's objects field by field.
var longFilesAllowed = map[string]bool{}

// repoFiles lists the repository's files that match pattern (git ls-files).
func repoFiles(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", "../..", "ls-files", pattern).Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	return strings.Fields(string(out))
}

func TestNoLongFiles(t *testing.T) {
	for _, f := range repoFiles(t, "*.go") {
		if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, ".pb.go") || longFilesAllowed[f] {
			continue
		}
		b, err := os.ReadFile(filepath.Join("../..", f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n > maxLines {
			t.Errorf("%s has %d lines, over %d: split it by concern", f, n, maxLines)
		}
	}
}

// TestREADMEListsEveryPackage: the README's layout table names every
// package under internal/ (a row per package, or its parent's row naming
// it as a sub-directory such as `ctl/`).
func TestREADMEListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	inLayout := false
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inLayout = line == "## Layout"
		case inLayout && strings.HasPrefix(line, "|"):
			table.WriteString(line + "\n")
		}
	}
	rows := table.String()
	if rows == "" {
		t.Fatal("README.md has no table under ## Layout")
	}
	for _, p := range goList(t) {
		dir, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok || !strings.HasPrefix(dir, "internal/") {
			continue
		}
		parent, base := filepath.Split(dir)
		if !strings.Contains(rows, "`"+dir+"`") && !strings.Contains(rows, "`"+strings.TrimSuffix(parent, "/")+"`") {
			t.Errorf("README.md's layout table has no row for %s", dir)
			continue
		}
		if !strings.Contains(rows, "`"+dir+"`") && !strings.Contains(rows, "`"+base+"/`") {
			t.Errorf("README.md's layout table names %s neither in a row nor as %s/ in its parent's", dir, base)
		}
	}
}
