// Package boundaries holds only a test: the module's import rules, checked
// against the package graph `go list` reports, so a forbidden import fails
// `go test ./...` instead of waiting for a reviewer.
package boundaries

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/drover-project/drover"

// pkg is the part of `go list -json` the rules read.
type pkg struct {
	ImportPath   string
	Standard     bool
	Module       *struct{ Path string }
	Imports      []string // direct imports of the non-test files
	TestImports  []string
	XTestImports []string
	Deps         []string // transitive imports of the non-test files
}

// rule forbids packages matching from to import packages matching to.
type rule struct {
	name string
	// from: the module packages the rule applies to.
	from func(path string) bool
	// to: the forbidden imports.
	to func(path string) bool
	// transitive: check Deps (everything linked), not only direct imports.
	transitive bool
	// tests: check the package's test imports too (direct only).
	tests bool
}

// under reports whether path is p or below it.
func under(p string) func(string) bool {
	return func(path string) bool { return path == p || strings.HasPrefix(path, p+"/") }
}

func is(p string) func(string) bool { return func(path string) bool { return path == p } }

func not(f func(string) bool) func(string) bool { return func(s string) bool { return !f(s) } }

func anyOf(fs ...func(string) bool) func(string) bool {
	return func(s string) bool { return slices.ContainsFunc(fs, func(f func(string) bool) bool { return f(s) }) }
}

var rules = []rule{
	{
		// The Kubernetes client stays in the rooms that talk to the API server; the
		// driver's assembly and the engine reach it only through internal/k8s, and
		// cmd/ and hack/ only through those packages. The operator's controller
		// and installer are API clients by nature (controller-runtime is built
		// on client-go); its API types stay free of it.
		name: "only internal/k8s/..., internal/cli, internal/operator/{controller,install} and internal/testenv/... import k8s.io/client-go",
		from: not(anyOf(under(module+"/internal/k8s"), is(module+"/internal/cli"), under(module+"/internal/testenv"),
			under(module+"/internal/operator/controller"), under(module+"/internal/operator/install"))),
		to: under("k8s.io/client-go"),
		// Tests too: a test importing client-go means the package's own code has
		// Kubernetes objects to check, which belongs in internal/k8s.
		tests: true,
	},
	{
		// The root package is the public facade over internal/driver; an internal
		// package that links it builds a cycle in all but name.
		name:       "nothing under internal/ links the root package",
		from:       under(module + "/internal"),
		to:         is(module),
		transitive: true,
	},
	{
		// The CLI validates and submits; the cluster manager is the driver's. What
		// both need lives in a small package they share.
		name:       "internal/cli does not link the cluster manager internal/k8s",
		from:       under(module + "/internal/cli"),
		to:         is(module + "/internal/k8s"),
		transitive: true,
	},
	{
		// Issue 44: options are typed and built once. podspec builds API objects
		// from its typed structs (ExecutorConf, DriverConf, Queue, VolcanoGroup);
		// internal/k8s/k8sconf reads the configuration into them.
		name: "internal/k8s/podspec does not import internal/config",
		from: is(module + "/internal/k8s/podspec"),
		to:   is(module + "/internal/config"),
	},
}

// violation is one forbidden import.
type violation struct {
	From, Kind, To, Rule string
}

func (v violation) String() string {
	return fmt.Sprintf("%s %s %s (rule: %s)", v.From, v.Kind, v.To, v.Rule)
}

// violations lists every broken rule, sorted.
func violations(pkgs []pkg, rules []rule) []violation {
	var out []violation
	for _, p := range pkgs {
		if p.Standard || p.Module == nil || p.Module.Path != module {
			continue
		}
		for _, r := range rules {
			if !r.from(p.ImportPath) {
				continue
			}
			seen := map[string]bool{}
			check := func(kind string, imports []string) {
				for _, imp := range imports {
					if r.to(imp) && !seen[imp] {
						seen[imp] = true
						out = append(out, violation{p.ImportPath, kind, imp, r.name})
					}
				}
			}
			if r.transitive {
				check("links", p.Deps)
			} else {
				check("imports", p.Imports)
			}
			if r.tests {
				check("tests import", p.TestImports)
				check("tests import", p.XTestImports)
			}
		}
	}
	slices.SortFunc(out, func(a, b violation) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// goList runs `go list -deps -json ./...` at the module root. go test puts the
// go command that runs it first on PATH, so this is the same toolchain.
func goList(t *testing.T) []pkg {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go command: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gobin, "list", "-deps", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestImportBoundaries(t *testing.T) {
	pkgs := goList(t)
	if !slices.ContainsFunc(pkgs, func(p pkg) bool { return p.ImportPath == module+"/internal/k8s" }) {
		t.Fatalf("go list found no %s/internal/k8s among %d packages: wrong directory?", module, len(pkgs))
	}
	imports := map[string][]string{}
	for _, p := range pkgs {
		imports[p.ImportPath] = p.Imports
	}
	for _, v := range violations(pkgs, rules) {
		if v.Kind == "links" {
			t.Errorf("%s\n\tvia %s", v, strings.Join(chain(imports, v.From, v.To), " -> "))
		} else {
			t.Errorf("%s", v)
		}
	}
}

// chain is a shortest import path from one package to another, to say where a
// transitive violation comes in.
func chain(imports map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var path []string
			for ; p != ""; p = prev[p] {
				path = append(path, p)
			}
			slices.Reverse(path)
			return path
		}
		for _, imp := range imports[p] {
			if _, ok := prev[imp]; !ok {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return []string{from, "?", to}
}

// TestRulesCatch checks the rules against a made-up graph, so a rule that
// matches nothing (a typo in a path) cannot pass TestImportBoundaries.
func TestRulesCatch(t *testing.T) {
	mod := &struct{ Path string }{module}
	graph := []pkg{
		{ImportPath: module + "/internal/metrics", Module: mod, Imports: []string{"k8s.io/client-go/tools/metrics"}},
		{ImportPath: module + "/internal/events", Module: mod, XTestImports: []string{"k8s.io/client-go/rest"}},
		{ImportPath: module + "/internal/k8s/podsource", Module: mod, Imports: []string{"k8s.io/client-go/kubernetes"}},
		{ImportPath: module + "/internal/k8s/podspec", Module: mod, Imports: []string{module + "/internal/config"},
			XTestImports: []string{module + "/internal/config"}},
		{ImportPath: module + "/internal/k8s/k8sconf", Module: mod, Imports: []string{module + "/internal/config"}},
		{ImportPath: module + "/internal/cli", Module: mod, Imports: []string{"k8s.io/client-go/rest"},
			Deps: []string{module + "/internal/k8s/submit", module + "/internal/k8s"}},
		{ImportPath: module + "/internal/driver", Module: mod, Deps: []string{module}},
		{ImportPath: module + "/cmd/drover", Module: mod, Deps: []string{module + "/internal/cli", "k8s.io/client-go/rest"}},
		{ImportPath: module, Module: mod, Deps: []string{module + "/internal/k8s", "k8s.io/client-go/rest"}},
	}
	want := []violation{
		{module + "/internal/cli", "links", module + "/internal/k8s", rules[2].name},
		{module + "/internal/driver", "links", module, rules[1].name},
		{module + "/internal/events", "tests import", "k8s.io/client-go/rest", rules[0].name},
		{module + "/internal/k8s/podspec", "imports", module + "/internal/config", rules[3].name},
		{module + "/internal/metrics", "imports", "k8s.io/client-go/tools/metrics", rules[0].name},
	}
	if diff := cmp.Diff(want, violations(graph, rules)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}
