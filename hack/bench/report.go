package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Figure is one measured number.
type Figure struct {
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Command string  `json:"command"`
}

// Ratio compares two figures against a target.
type Ratio struct {
	Name   string  `json:"name"`
	Of     string  `json:"of"`
	To     string  `json:"to"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Met    bool    `json:"met"`
}

// Report is a whole run.
type Report struct {
	Date    string   `json:"date"`
	Machine string   `json:"machine"`
	Go      string   `json:"go"`
	Figures []Figure `json:"figures"`
	Ratios  []Ratio  `json:"ratios"`
	Skipped []string `json:"skipped,omitempty"`
}

// slope adds the least-squares slope of the adaptive allocation's metric
// against N (in thousands) over the labelled runs, when all have it.
func (r *Report) slope(name, unit, metric string, labels map[float64]string) {
	var xs, ys []float64
	var cmds []string
	for x, label := range labels {
		f, ok := r.figure(label + "BenchmarkAllocationAdaptive " + metric)
		if !ok {
			return
		}
		xs, ys = append(xs, x), append(ys, f.Value)
		cmds = append(cmds, fmt.Sprintf("N=%g,000: %.4g", x, f.Value))
	}
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	slices.Sort(cmds)
	for i, f := range r.Figures {
		if f.Name == name {
			r.Figures = slices.Delete(r.Figures, i, i+1)
			break
		}
	}
	r.Figures = append(r.Figures, Figure{Name: name, Value: (n*sxy - sx*sy) / (n*sxx - sx*sx), Unit: unit,
		Command: "derived from " + strings.Join(cmds, ", ")})
}

func (r *Report) figure(name string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.Name == name {
			return f, true
		}
	}
	return Figure{}, false
}

// ratio adds of/to with a target checked by met; a ratio reported for
// information has no target and a nil met.
func (r *Report) ratio(name, of, to, target string, met func(float64) bool) {
	a, ok1 := r.figure(of)
	b, ok2 := r.figure(to)
	if !ok1 || !ok2 || b.Value == 0 {
		return
	}
	v := a.Value / b.Value
	x := Ratio{Name: name, Of: of, To: to, Value: v, Target: target}
	if met != nil {
		x.Met = met(v)
	}
	r.Ratios = append(r.Ratios, x)
}

// measured adds a ratio a benchmark measured itself (as the median of
// paired runs), recorded as figure of, with a target checked by met.
func (r *Report) measured(name, of, target string, met func(float64) bool) {
	a, ok := r.figure(of)
	if !ok {
		return
	}
	x := Ratio{Name: name, Of: of, Value: a.Value, Target: target}
	if met != nil {
		x.Met = met(a.Value)
	}
	r.Ratios = append(r.Ratios, x)
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$`)

// goBench runs a go test benchmark command and records its metrics as
// figures named "<label><benchmark> <unit>".
func (r *Report) goBench(ctx context.Context, timeout time.Duration, label string, env []string, args ...string) error {
	if len(args) > 0 && args[0] == "test" {
		// Benchmarks on a control plane or an S3 server are behind the
		// integration build tag; the tag leaves the others as they are.
		args = append([]string{"test", "-tags", "integration"}, args[1:]...)
	}
	out, err := run(ctx, timeout, env, "go", args...)
	cmdline := strings.Join(append(slices.Clone(env), "go", strings.Join(args, " ")), " ")
	sc := bufio.NewScanner(bytes.NewReader(out))
	found := false
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		fields := strings.Fields(m[4])
		for i := 0; i+1 < len(fields); i += 2 {
			v, perr := strconv.ParseFloat(fields[i], 64)
			if perr != nil {
				continue
			}
			unit := fields[i+1]
			if unit == "ns/op" {
				v, unit = v/1e9, "s/op"
			}
			r.Figures = append(r.Figures, Figure{Name: label + m[1] + " " + unit, Value: v, Unit: unit, Command: cmdline})
			found = true
		}
	}
	if os.Getenv("DROVER_BENCH_VERBOSE") != "" {
		// The benchmarks' logs say more than their figures (a job's stages).
		os.Stderr.Write(out)
	}
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", cmdline, err, tail(out))
	}
	if !found {
		return fmt.Errorf("%s printed no benchmark results\n%s", cmdline, tail(out))
	}
	return nil
}

// python runs a peer's script that prints one JSON object.
func (r *Report) python(ctx context.Context, timeout time.Duration, script string, args []string, figures map[string]string, unit string) error {
	out, err := run(ctx, timeout, nil, "/usr/bin/python3", append([]string{script}, args...)...)
	cmdline := "python3 " + script + " " + strings.Join(args, " ")
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", cmdline, err, tail(out))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		return fmt.Errorf("%s: reading its result: %w", cmdline, err)
	}
	for key, name := range figures {
		v, ok := res[key].(float64)
		if !ok {
			return fmt.Errorf("%s: no %q in its result", cmdline, key)
		}
		r.Figures = append(r.Figures, Figure{Name: name, Value: v, Unit: unit, Command: cmdline})
	}
	return nil
}
