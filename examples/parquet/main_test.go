package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover"
	"github.com/drover-project/drover/internal/envvar"
)

// TestMain lets the test binary be the executor processes of
// local-cluster jobs, as an application's main does.
func TestMain(m *testing.M) {
	if os.Getenv(envvar.Role) == envvar.RoleExecutor {
		drover.Main(nil)
	}
	os.Exit(m.Run())
}

// expected totals the sales 0..n-1 by region in one loop, the reference
// for the job.
func expected(n int64) map[string]Totals {
	want := map[string]Totals{}
	for i := range n {
		s := NewSale(i)
		t := want[s.Region]
		t.Sales++
		t.Units += int64(s.Units)
		t.Revenue += float64(s.Units) * s.Price
		want[s.Region] = t
	}
	return want
}

// TestAggregateLocal is the same job on a local directory.
func TestAggregateLocal(t *testing.T) {
	const n = 20_000
	dir := filepath.Join(t.TempDir(), "sales")
	got := parseTotals(t, runProgram(t, nil, dir, fmt.Sprint(n), "3"))
	if diff := gocmp.Diff(expected(n), got); diff != "" {
		t.Errorf("totals printed (-want +got):\n%s", diff)
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{{}, {"out", "many"}, {"out", "10", "0"}} {
		var stderr bytes.Buffer
		code := drover.Run(append([]string{"--master", "local[1]", "--conf", "drover.log.level=error"}, args...), &stderr,
			func(ctx *drover.Context) error { return run(ctx, &bytes.Buffer{}) })
		if code == 0 || !strings.Contains(stderr.String(), "expected a positive integer") && !strings.Contains(stderr.String(), "usage") {
			t.Errorf("args %q: exit code %d, stderr:\n%s", args, code, stderr.String())
		}
	}
}

// runProgram runs the program's run with args on local-cluster[2,1,512]
// and returns what it printed.
func runProgram(t *testing.T, conf []string, args ...string) string {
	t.Helper()
	flags := []string{"--master", "local-cluster[2,1,512]", "--conf", "drover.log.level=warn"}
	for _, c := range conf {
		flags = append(flags, "--conf", c)
	}
	var stdout, stderr bytes.Buffer
	code := drover.Run(append(flags, args...), &stderr, func(ctx *drover.Context) error { return run(ctx, &stdout) })
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr.String())
	}
	return stdout.String()
}

// parseTotals reads the table run prints.
func parseTotals(t *testing.T, stdout string) map[string]Totals {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "region") {
		t.Fatalf("no table printed:\n%s", stdout)
	}
	got := map[string]Totals{}
	for _, l := range lines[1:] {
		var region string
		var tot Totals
		if _, err := fmt.Sscan(l, &region, &tot.Sales, &tot.Units, &tot.Revenue); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got[region] = tot
	}
	return got
}
