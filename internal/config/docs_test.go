package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDocsAreUpToDate keeps docs/configuration.md in step with the registry.
func TestDocsAreUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the generated docs: %v; run `make docs` to create docs/configuration.md", err)
	}
	if diff := cmp.Diff(string(b), Markdown()); diff != "" {
		t.Errorf("docs/configuration.md is out of date; run `make docs` "+
			"(go run ./internal/config/gendocs > docs/configuration.md) and commit the result (-file,+registry):\n%s", diff)
	}
}

func TestMarkdownLayout(t *testing.T) {
	md := Markdown()
	spark, drover := strings.Index(md, "\n## Spark keys\n"), strings.Index(md, "\n## Drover keys\n")
	if spark < 0 || drover < spark {
		t.Fatalf("Markdown has no Spark section followed by a Drover section")
	}
	var keys []string
	for line := range strings.SplitSeq(md, "\n") {
		if key, ok := strings.CutPrefix(line, "| `"); ok {
			keys = append(keys, key[:strings.Index(key, "`")])
		}
	}
	want := registeredKeys()
	// Key families are rows too, shown as prefix<NAME>.
	registryMu.RLock()
	for _, p := range prefixes {
		want = append(want, p.prefix+"<"+p.name+">")
	}
	registryMu.RUnlock()
	slices.Sort(want)
	// Sorted by key, spark.* first: registeredKeys is sorted and "drover."
	// sorts before "spark.", so move the drover keys to the end.
	var sparkKeys, droverKeys []string
	for _, k := range want {
		if strings.HasPrefix(k, "drover.") {
			droverKeys = append(droverKeys, k)
		} else {
			sparkKeys = append(sparkKeys, k)
		}
	}
	if diff := cmp.Diff(append(sparkKeys, droverKeys...), keys); diff != "" {
		t.Errorf("keys in Markdown (-want,+got):\n%s", diff)
	}
}
