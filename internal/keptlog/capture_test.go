package keptlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKeptLogsPodIndex: a driver pod's name leads to its application.
func TestKeptLogsPodIndex(t *testing.T) {
	ctx := context.Background()
	s := LocalSink(t.TempDir())
	if err := PutPod(ctx, s, "spark", "wordcount-1-driver", "drover-0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	got, err := AppOfPod(ctx, s, "spark", "wordcount-1-driver")
	if err != nil || got != "drover-0123456789abcdef" {
		t.Errorf("AppOfPod = %q, %v", got, err)
	}
	if _, err := AppOfPod(ctx, s, "spark", "other-driver"); !errors.Is(err, ErrNoLog) {
		t.Errorf("AppOfPod of an unknown pod: %v, want ErrNoLog", err)
	}
	if err := PutPod(ctx, s, "spark", "../x", "drover-0123456789abcdef"); err == nil {
		t.Error("PutPod took a pod name with a slash")
	}
}

// TestKeptLogsPending: output before the Writer exists is held (the last
// bytes, bounded) and passed on when it is attached.
func TestKeptLogsPending(t *testing.T) {
	p := NewPending(8)
	fmt.Fprint(p, "0123")
	fmt.Fprint(p, "456789")
	var out bytes.Buffer
	if dropped := p.Attach(&out); dropped != 2 {
		t.Errorf("dropped %d bytes, want 2", dropped)
	}
	fmt.Fprint(p, "ab")
	if diff := cmp.Diff("23456789ab", out.String()); diff != "" {
		t.Errorf("passed on (-want +got):\n%s", diff)
	}
	d := NewPending(0)
	fmt.Fprint(d, "x")
	d.Discard()
	fmt.Fprint(d, "y")
	var none bytes.Buffer
	d.Attach(&none)
	if none.Len() != 0 {
		t.Errorf("a discarded Pending passed on %q", none.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestKeptLogsCaptureStdio: what the process writes to its standard output
// and error, through any path, reaches the kept log, and stop restores
// the descriptors.
func TestKeptLogsCaptureStdio(t *testing.T) {
	var kept lockedBuffer
	direct, stop, err := CaptureStdio(&kept)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := CaptureStdio(&kept); err == nil {
		t.Error("a second capture started while one runs")
	}
	fmt.Fprintln(os.Stderr, "kept-log test: to stderr")
	fmt.Fprintln(os.Stdout, "kept-log test: to stdout")
	fmt.Fprintln(direct, "kept-log test: direct")
	log.Print("kept-log test: the log package")
	stop(context.Background())
	stop(context.Background()) // twice is harmless
	fmt.Fprintln(os.Stderr, "kept-log test: after stop")
	got := kept.b.String()
	for _, want := range []string{"kept-log test: to stderr\n", "kept-log test: to stdout\n", "kept-log test: direct\n", "kept-log test: the log package\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("kept %q, want it to hold %q", got, want)
		}
	}
	if strings.Contains(got, "after stop") {
		t.Errorf("kept output written after stop: %q", got)
	}
}
