package testenv

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Requests is what the API server says it served, by kind of request
// ("VERB resource" or "VERB resource/subresource"), from its own metrics.
type Requests map[string]RequestStat

// RequestStat is how many requests of a kind the API server served
// (apiserver_request_total) and the seconds it took to answer them (the
// sum of apiserver_request_duration_seconds; long-running requests such as
// watches may have none).
type RequestStat struct {
	Count   int
	Seconds float64
}

// APIServerRequests reads the API server's request metrics for resources
// (every resource when none is given).
func (e *Env) APIServerRequests(ctx context.Context, resources ...string) (Requests, error) {
	raw, err := e.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return parseRequests(raw, resources)
}

// parseRequests reads the request metrics of resources (all when empty)
// from the API server's metrics text.
func parseRequests(raw []byte, resources []string) (Requests, error) {
	out := Requests{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var add func(*RequestStat, float64)
		var rest string
		if r, ok := strings.CutPrefix(line, "apiserver_request_total{"); ok {
			rest, add = r, func(s *RequestStat, v float64) { s.Count += int(v) }
		} else if r, ok := strings.CutPrefix(line, "apiserver_request_duration_seconds_sum{"); ok {
			rest, add = r, func(s *RequestStat, v float64) { s.Seconds += v }
		} else {
			continue
		}
		labelText, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(labelText, ",") {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = strings.Trim(v, `"`)
		}
		if len(resources) > 0 && !slices.Contains(resources, labels["resource"]) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if s := labels["subresource"]; s != "" {
			key += "/" + s
		}
		s := out[key]
		add(&s, v)
		out[key] = s
	}
	return out, sc.Err()
}

// Since is what was served after before was read.
func (r Requests) Since(before Requests) Requests {
	d := Requests{}
	for k, s := range r {
		s.Count -= before[k].Count
		s.Seconds -= before[k].Seconds
		if s.Count != 0 {
			d[k] = s
		}
	}
	return d
}

// Counts is the number of requests of each kind.
func (r Requests) Counts() map[string]int {
	out := make(map[string]int, len(r))
	for k, s := range r {
		out[k] = s.Count
	}
	return out
}

// String lists the kinds in order with their counts and, where known, the
// mean time the API server took to answer one:
// "POST pods=2 (7.9 ms), WATCH pods=1".
func (r Requests) String() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(r)) {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		s := r[k]
		fmt.Fprintf(&b, "%s=%d", k, s.Count)
		if s.Seconds > 0 && s.Count > 0 {
			fmt.Fprintf(&b, " (%.1f ms)", s.Seconds*1000/float64(s.Count))
		}
	}
	return b.String()
}
