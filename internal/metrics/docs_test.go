package metrics

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// TestDocsAreUpToDate keeps docs/metrics.md in step with the metrics the
// driver registers.
func TestDocsAreUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "metrics.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the generated docs: %v; run `make docs` to create docs/metrics.md", err)
	}
	want, err := DriverMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(b), want); diff != "" {
		t.Errorf("docs/metrics.md is out of date; run `make docs` (or go generate ./internal/metrics/) "+
			"and commit the result (-file,+registry):\n%s", diff)
	}
}

// TestDocsListEveryFamilyServed checks the reference against a scrape: every
// family the driver serves once each kind of event happened is documented,
// with its type and labels.
func TestDocsListEveryFamilyServed(t *testing.T) {
	d := NewDriver(Options{AppID: "app-1", AppName: "wc", Backlog: noBacklog{}}, true)
	for _, e := range storyEvents() {
		d.Events.Handle(e)
	}
	RegisterKubernetes(d.Registry)
	apiRequests.WithLabelValues("GET", "200").Add(0)
	apiLatency.WithLabelValues("GET").Observe(0)
	apiThrottled.WithLabelValues("GET").Observe(0)
	d.Dynalloc.TargetChanged("up")
	families, err := d.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := d.Registry.Docs()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Doc{}
	for _, doc := range docs {
		byName[doc.Name] = doc
	}
	served := 0
	for _, f := range families {
		name := f.GetName()
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		served++
		doc, ok := byName[name]
		if !ok {
			t.Errorf("%s is served but not documented", name)
			continue
		}
		if got := strings.ToLower(f.GetType().String()); got != doc.Type {
			t.Errorf("%s: served as %s, documented as %s", name, got, doc.Type)
		}
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		want := append(append([]string{}, doc.ConstLabels...), doc.Labels...)
		if diff := cmp.Diff(sorted(want), sorted(labels)); diff != "" {
			t.Errorf("%s: labels served (-documented +served):\n%s", name, diff)
		}
	}
	// objstore's retries and the dropped events have no series here.
	if served < len(docs)-2 {
		t.Errorf("%d families served, %d documented: the story misses some", served, len(docs))
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func TestParseDesc(t *testing.T) {
	tests := map[string]struct {
		desc *prometheus.Desc
		want Doc
	}{
		"plain": {
			desc: prometheus.NewDesc("a_total", "Things.", nil, nil),
			want: Doc{Name: "a_total", Help: "Things."},
		},
		"labels": {
			desc: prometheus.NewDesc("b", "B.", []string{"x", "y"}, nil),
			want: Doc{Name: "b", Help: "B.", Labels: []string{"x", "y"}},
		},
		"help with quotes, commas and braces": {
			desc: prometheus.NewDesc("c", `Says "hi", then {x}}, and \ ends.`, []string{"z"}, nil),
			want: Doc{Name: "c", Help: `Says "hi", then {x}}, and \ ends.`, Labels: []string{"z"}},
		},
		"constant labels with awkward values": {
			desc: prometheus.NewDesc("d", "D.", []string{"v"}, prometheus.Labels{"version": `1,"2"}`, "revision": "abc"}),
			want: Doc{Name: "d", Help: "D.", Labels: []string{"v"}, ConstLabels: []string{"revision", "version"}},
		},
		"constrained label": {
			desc: prometheus.V2.NewDesc("e", "E.", prometheus.ConstrainedLabels{{Name: "k", Constraint: strings.ToLower}}, nil),
			want: Doc{Name: "e", Help: "E.", Labels: []string{"k"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseDesc(tc.desc.String())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseDesc(%s) (-want +got):\n%s", tc.desc, diff)
			}
		})
	}
	for _, bad := range []string{"", "Desc{", `Desc{fqName: "x"}`, `Desc{fqName: "x", help: "y", variableLabels: {a}`, `Desc{fqName: x}`} {
		if _, err := parseDesc(bad); err == nil {
			t.Errorf("parseDesc(%q) succeeded", bad)
		}
	}
}

func TestMarkdownEscapesCells(t *testing.T) {
	md := Markdown([]Doc{{Name: "drover_x", Type: "gauge", Help: "a | b <c>\nd", Labels: []string{"l"}}})
	if want := "| `drover_x` | gauge | `l` | a \\| b &lt;c> d |\n"; !strings.Contains(md, want) {
		t.Errorf("Markdown lacks %q:\n%s", want, md)
	}
}
