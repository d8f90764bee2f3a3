package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
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
