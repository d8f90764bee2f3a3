package testenv

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseRequests(t *testing.T) {
	raw := []byte(`# HELP apiserver_request_total Counter of apiserver requests.
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 5
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1",le="0.005"} 1
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 0.04
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 4
`)
	for _, tc := range []struct {
		name      string
		resources []string
		want      Requests
	}{
		{"all", nil, Requests{
			"POST pods":         {Count: 4, Seconds: 0.04},
			"POST pods/binding": {Count: 2},
			"GET configmaps":    {Count: 5},
		}},
		{"pods only", []string{"pods"}, Requests{
			"POST pods":         {Count: 4, Seconds: 0.04},
			"POST pods/binding": {Count: 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRequests(raw, tc.resources)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseRequests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestsSince(t *testing.T) {
	before := Requests{"POST pods": {Count: 4, Seconds: 0.04}, "GET configmaps": {Count: 5, Seconds: 0.01}}
	after := Requests{"POST pods": {Count: 6, Seconds: 0.05}, "GET configmaps": {Count: 5, Seconds: 0.01}, "DELETE pods": {Count: 1, Seconds: 0.02}}
	got := after.Since(before)
	want := Requests{"POST pods": {Count: 2, Seconds: 0.05 - 0.04}, "DELETE pods": {Count: 1, Seconds: 0.02}}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("Since (-want +got):\n%s", diff)
	}
	if s, want := got.String(), "DELETE pods=1 (20.0 ms), POST pods=2 (5.0 ms)"; s != want {
		t.Errorf("String() = %q, want %q", s, want)
	}
	if diff := cmp.Diff(map[string]int{"POST pods": 2, "DELETE pods": 1}, got.Counts()); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
}
