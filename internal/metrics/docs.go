package metrics

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/drover-project/drover/internal/events"
)

// Doc describes one metric family as registered.
type Doc struct {
	Name, Type, Help string
	// Labels are the labels whose values vary; ConstLabels those fixed at
	// registration (spark_info's version and revision).
	Labels, ConstLabels []string
}

// Docs describes every metric family of the collectors registered on r,
// sorted by name.
func (r *Registry) Docs() ([]Doc, error) {
	r.mu.Lock()
	cs := slices.Clone(r.collectors)
	r.mu.Unlock()
	var docs []Doc
	for _, c := range cs {
		d, err := describe(c)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	slices.SortFunc(docs, func(a, b Doc) int { return strings.Compare(a.Name, b.Name) })
	return docs, nil
}

// describe documents a collector's families. A Desc names a family and its
// labels; the type comes from a sample the collector yields or, for a
// vector without children yet, from the vector's Go type.
func describe(c prometheus.Collector) ([]Doc, error) {
	descs := make(chan *prometheus.Desc)
	go func() { c.Describe(descs); close(descs) }()
	var texts []string
	for d := range descs {
		texts = append(texts, d.String())
	}
	var docs []Doc
	for _, text := range texts {
		doc, err := parseDesc(text)
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
	types := map[string]string{}
	samples := make(chan prometheus.Metric)
	go func() { c.Collect(samples); close(samples) }()
	for m := range samples {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		if d, err := parseDesc(m.Desc().String()); err == nil {
			types[d.Name] = sampleType(&pb)
		}
	}
	for i := range docs {
		t, ok := types[docs[i].Name]
		if !ok {
			t, ok = vecType(c)
		}
		if tc, isTyped := c.(typedCollector); !ok && isTyped {
			t, ok = tc.metricType(), true
		}
		if !ok {
			return nil, fmt.Errorf("metric %s: cannot tell its type (%T yields no sample)", docs[i].Name, c)
		}
		docs[i].Type = t
	}
	return docs, nil
}

func sampleType(m *dto.Metric) string {
	switch {
	case m.Counter != nil:
		return "counter"
	case m.Gauge != nil:
		return "gauge"
	case m.Histogram != nil:
		return "histogram"
	case m.Summary != nil:
		return "summary"
	}
	return "untyped"
}

// typedCollector is a collector of drover's that tells its type, which
// the documentation cannot read from a sample before the first one.
type typedCollector interface{ metricType() string }

func vecType(c prometheus.Collector) (string, bool) {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter", true
	case *prometheus.GaugeVec:
		return "gauge", true
	case *prometheus.HistogramVec:
		return "histogram", true
	case *prometheus.SummaryVec:
		return "summary", true
	}
	return "", false
}

// parseDesc reads what prometheus.Desc.String prints, the only place the
// client library shows a description's name, help and labels:
//
//	Desc{fqName: "n", help: "h", constLabels: {a="x",b="y"}, variableLabels: {c,d}}
//
// Fields it does not use (unit, in newer versions) are skipped.
func parseDesc(s string) (Doc, error) {
	bad := func(what string) (Doc, error) {
		return Doc{}, fmt.Errorf("reading metric description %q: %s", s, what)
	}
	rest, ok := strings.CutPrefix(s, "Desc{")
	if !ok {
		return bad("no Desc{")
	}
	var d Doc
	seen := map[string]bool{}
	for rest != "}" {
		key, after, ok := strings.Cut(rest, ": ")
		if !ok {
			return bad("no field after " + strconv.Quote(rest))
		}
		seen[key] = true
		var err error
		switch {
		case strings.HasPrefix(after, `"`):
			var v string
			if v, rest, err = unquotePrefix(after); err != nil {
				return bad(key + ": " + err.Error())
			}
			switch key {
			case "fqName":
				d.Name = v
			case "help":
				d.Help = v
			}
		case strings.HasPrefix(after, "{"):
			var items []string
			if items, rest, err = setPrefix(after); err != nil {
				return bad(key + ": " + err.Error())
			}
			switch key {
			case "constLabels":
				for _, it := range items {
					name, _, _ := strings.Cut(it, "=")
					d.ConstLabels = append(d.ConstLabels, name)
				}
			case "variableLabels":
				for _, l := range items {
					// A constrained label prints as c(name).
					if inner, ok := strings.CutPrefix(l, "c("); ok {
						l = strings.TrimSuffix(inner, ")")
					}
					d.Labels = append(d.Labels, l)
				}
			}
		default:
			return bad(key + ": neither a string nor a set")
		}
		rest = strings.TrimPrefix(rest, ", ")
	}
	if !seen["fqName"] || !seen["help"] || !seen["variableLabels"] {
		return bad("a name, help or labels missing")
	}
	return d, nil
}

// setPrefix reads "{a,b="x,y"}" at the start of s into its items, commas
// inside quoted strings included.
func setPrefix(s string) (items []string, rest string, err error) {
	s = s[1:]
	var cur strings.Builder
	for len(s) > 0 {
		switch s[0] {
		case '"':
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, "", errors.New("a bad quoted string")
			}
			cur.WriteString(q)
			s = s[len(q):]
			continue
		case ',':
			items = append(items, cur.String())
			cur.Reset()
		case '}':
			if cur.Len() > 0 {
				items = append(items, cur.String())
			}
			return items, s[1:], nil
		default:
			cur.WriteByte(s[0])
		}
		s = s[1:]
	}
	return nil, "", errors.New("no closing brace")
}

func unquotePrefix(s string) (value, rest string, err error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", errors.New("not a quoted string")
	}
	v, err := strconv.Unquote(q)
	return v, s[len(q):], err
}

//go:generate sh -c "go run ./gendocs > ../../docs/metrics.md"

// docsIntro heads docs/metrics.md.
const docsIntro = `<!-- Code generated by "make docs" (go run ./internal/metrics/gendocs); DO NOT EDIT. -->

# Metrics

The driver serves Prometheus metrics, in the text format, on the web UI's port (` + "`spark.ui.port`" + `, 4040 by
default) at ` + "`/metrics`" + `, and at ` + "`/metrics/executors/prometheus`" + ` where Spark serves its executor metrics,
so a scrape configured for Spark finds them. The metrics follow the driver's event stream; a consumer that falls
behind drops events rather than slow the scheduler, and ` + "`drover_events_dropped_total`" + ` counts them.

- **Spark's names.** ` + "`metrics_executor_*`" + ` and ` + "`spark_info`" + ` are the metrics of Spark's
  ` + "`/metrics/executors/prometheus`" + `, with its names and labels. Each executor has its series while it is
  registered; they go when it is removed. In local mode the tasks run on executor ` + "`driver`" + `, as in Spark.
  Spark's JVM memory, garbage-collection, disk and storage metrics have no counterpart in drover and are absent.
- **drover's own** metrics are named ` + "`drover_*`" + `: executor pods, allocation rounds, removals, the scheduler's
  backlog, tasks, jobs and the Kubernetes API requests of the driver.
- **` + "`go_*` and `process_*`" + `**, not listed here: the Go runtime's and the process's (memory, CPU, open files), as
  the Prometheus Go client exports them.

This file is generated from the metrics the driver registers; ` + "`make docs`" + ` refreshes it.
`

// Markdown is docs/metrics.md: the metric families of docs, Spark's and
// then drover's, each sorted by name.
func Markdown(docs []Doc) string {
	var b strings.Builder
	b.WriteString(docsIntro)
	section := func(title string, keep func(Doc) bool) {
		fmt.Fprintf(&b, "\n## %s\n\n| Metric | Type | Labels | Description |\n|---|---|---|---|\n", title)
		for _, d := range docs {
			if !keep(d) {
				continue
			}
			labels := make([]string, 0, len(d.Labels)+len(d.ConstLabels))
			for _, l := range append(slices.Clone(d.ConstLabels), d.Labels...) {
				labels = append(labels, "`"+l+"`")
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Name, d.Type, strings.Join(labels, ", "), cell(d.Help))
		}
	}
	spark := func(d Doc) bool {
		return strings.HasPrefix(d.Name, "metrics_executor_") || strings.HasPrefix(d.Name, "spark_")
	}
	section("Spark's metrics", spark)
	section("drover's metrics", func(d Doc) bool { return !spark(d) })
	return b.String()
}

// cell makes text safe in a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;").Replace(s)
}

// DriverMarkdown is docs/metrics.md for the metrics NewDriver registers,
// with every option that adds metrics set.
func DriverMarkdown() (string, error) {
	bus := events.NewBus(nil, nil)
	defer bus.Close()
	d := NewDriver(Options{Backlog: noBacklog{}, Bus: bus}, true)
	bus.Subscribe("metrics", 1, d.Events.Handle)
	docs, err := d.Registry.Docs()
	if err != nil {
		return "", err
	}
	return Markdown(docs), nil
}

type noBacklog struct{}

func (noBacklog) PendingTasks() int { return 0 }
func (noBacklog) RunningTasks() int { return 0 }
