package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/history"
)

// drover history serves this machine only unless --host says otherwise:
// its pages have no authentication.
func TestHistoryListensOnLoopback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	cmd := newHistoryCommand()
	cmd.SetArgs([]string{"--dir", t.TempDir(), "--port", "0"})
	cmd.SetOut(pw)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading what drover history printed: %v (ended with %v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	const prefix = "History server at "
	if !strings.HasPrefix(line, prefix) {
		t.Fatalf("drover history printed %q", line)
	}
	u, err := url.Parse(strings.Fields(strings.TrimPrefix(line, prefix))[0])
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" {
		t.Errorf("drover history listens on %s, want 127.0.0.1", u.Host)
	}
	resp, err := http.Get(u.String() + "/api/v1/applications")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /api/v1/applications: %s", resp.Status)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("drover history: %v", err)
	}
}

// TestDriverRestartHistoryLines: drover history prints a line per attempt
// of an application whose driver restarted, none for the others.
func TestDriverRestartHistoryLines(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		apps [][]history.Attempt
		want []string
	}{
		{"no attempts", [][]history.Attempt{{{AppID: "app-1", Status: "succeeded", Start: t0}}}, nil},
		{"one attempt", [][]history.Attempt{{{AppID: "app-1", AttemptID: "1", Status: "succeeded", Start: t0}}}, nil},
		{"restarted", [][]history.Attempt{
			{{AppID: "app-0", Status: "failed", Start: t0}},
			{{AppID: "drover-1", AttemptID: "2", Status: "succeeded", Start: t0.Add(time.Minute), End: t0.Add(2 * time.Minute)},
				{AppID: "drover-1", AttemptID: "1", Status: "incomplete", Start: t0}},
			{{AppID: "drover-2", AttemptID: "2", Status: "incomplete"}, {AppID: "drover-2", AttemptID: "1", Status: ""}},
		}, []string{
			"  drover-1 attempt 2: succeeded, started 2026-11-24 12:01:00 UTC",
			"  drover-1 attempt 1: incomplete (running, or its driver was stopped), started 2026-11-24 12:00:00 UTC",
			"  drover-2 attempt 2: incomplete (running, or its driver was stopped)",
			"  drover-2 attempt 1: no end recorded",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, attemptLines(tc.apps)); diff != "" {
				t.Errorf("attemptLines (-want +got):\n%s", diff)
			}
		})
	}
}
