package eventlog

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// gatedFile is a file whose writes wait for its gate to open.
type gatedFile struct {
	gate    chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
	closed  bool
	aborted bool
	fail    error
}

func newGatedFile() *gatedFile { return &gatedFile{gate: make(chan struct{})} }

func (f *gatedFile) Write(p []byte) (int, error) {
	<-f.gate
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return 0, f.fail
	}
	return f.buf.Write(p)
}

func (f *gatedFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *gatedFile) Abort() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.aborted = true
}

func (f *gatedFile) state() (string, bool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String(), f.closed, f.aborted
}

func noOpen(string) (io.WriteCloser, error) { return nil, errors.New("no next file") }

func name(n string) string { return "dir/" + n }

// A stalled storage costs the writer nothing until the bound: writes
// return at once, and the storage gets them in order once it moves.
func TestSpoolDoesNotWaitForTheStorage(t *testing.T) {
	f := newGatedFile()
	s := newSpool(f, "a", noOpen, name)
	done := make(chan struct{})
	var want strings.Builder
	go func() {
		defer close(done)
		for i := range 1000 {
			line := strings.Repeat("x", i%50) + "\n"
			want.WriteString(line)
			if _, err := s.Write([]byte(line)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writes waited for a stalled storage")
	}
	close(f.gate)
	if err := s.finish(); err != nil {
		t.Fatal(err)
	}
	got, closed, aborted := f.state()
	if got != want.String() || !closed || aborted {
		t.Errorf("the file got %d bytes (want %d, same: %v), closed %v, aborted %v; want all, closed, not aborted",
			len(got), want.Len(), got == want.String(), closed, aborted)
	}
}

// Past the bound the log fails, and its file is abandoned, not completed.
func TestSpoolFailsWhenTheStorageFallsBehind(t *testing.T) {
	f := newGatedFile()
	s := newSpool(f, "a", noOpen, name)
	s.maxPending = 1000
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = s.Write(make([]byte, 100))
	}
	if !errors.Is(err, errBehind) || !errors.Is(s.failure(), errBehind) {
		t.Fatalf("writes past the bound: %v (failure %v), want errBehind", err, s.failure())
	}
	s.abort()
	close(f.gate)
	<-s.done
	if _, closed, aborted := f.state(); closed || !aborted {
		t.Errorf("the file: closed %v, aborted %v; want aborted only", closed, aborted)
	}
}

// A rolled log's file is closed once its bytes are written, and the next
// created for those after it; a storage failure names its file.
func TestSpoolRollsAndReportsFailures(t *testing.T) {
	first, second := newGatedFile(), newGatedFile()
	close(first.gate)
	close(second.gate)
	second.fail = errors.New("disk full")
	var opened []string
	s := newSpool(first, "a", func(n string) (io.WriteCloser, error) {
		opened = append(opened, n)
		return second, nil
	}, name)
	if _, err := s.Write([]byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.next("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("two")); err != nil {
		t.Fatal(err)
	}
	s.wait()
	got, closed, _ := first.state()
	if diff := cmp.Diff([]any{"one", true, []string{"b"}}, []any{got, closed, opened}); diff != "" {
		t.Errorf("first file's bytes, closed, files opened (-want +got):\n%s", diff)
	}
	if err := s.failure(); err == nil || err.Error() != "writing dir/b: disk full" {
		t.Errorf("failure = %v, want the second file's", err)
	}
	if _, err := s.Write([]byte("three")); err == nil {
		t.Error("a write after the failure succeeded")
	}
	if _, _, aborted := second.state(); !aborted {
		t.Error("the failed file was not abandoned")
	}
}
