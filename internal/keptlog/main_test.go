package keptlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestMain fails the package's tests if a goroutine they started outlives
// them: a Writer's shipper not stopped by Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

var driver1 = Process{AppID: "drover-0123456789abcdef", Attempt: 1}

// memSink is a Sink in memory that can be taken down.
type memSink struct {
	appends bool

	mu    sync.Mutex
	files map[string][]byte
	down  error // every operation fails with it while set
	ops   int
}

func newMemSink(appends bool) *memSink { return &memSink{appends: appends, files: map[string][]byte{}} }

func (s *memSink) setDown(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = err
}

func (s *memSink) op() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops++
	return s.down
}

func (s *memSink) Put(_ context.Context, name string, data []byte) error {
	if err := s.op(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[name] = slices.Clone(data)
	return nil
}

func (s *memSink) Append(_ context.Context, name string, data []byte) error {
	if !s.appends {
		return errors.ErrUnsupported
	}
	if err := s.op(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[name] = append(s.files[name], data...)
	return nil
}

func (s *memSink) Appends() bool { return s.appends }

func (s *memSink) List(_ context.Context, dir string) ([]File, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []File
	for _, name := range slices.Sorted(maps.Keys(s.files)) {
		if strings.HasPrefix(name, dir+"/") {
			out = append(out, File{Name: name, Size: int64(len(s.files[name]))})
		}
	}
	return out, nil
}

func (s *memSink) Open(_ context.Context, name string, off int64) (io.ReadCloser, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.files[name]
	if !ok {
		return nil, errors.New("no such file " + name)
	}
	return io.NopCloser(bytes.NewReader(slices.Clone(b[off:]))), nil
}

func (s *memSink) Delete(_ context.Context, names ...string) error {
	if err := s.op(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		delete(s.files, n)
	}
	return nil
}

func (s *memSink) Path(name string) string { return "mem:/" + name }

// names lists the sink's files.
func (s *memSink) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.files))
}

func (s *memSink) set(name string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[name] = data
}

// bubble is a Writer on a fake clock in a synctest bubble.
type bubble struct {
	t   *testing.T
	clk *clocktesting.FakeClock
	w   *Writer
	log *bytes.Buffer // the Writer's warnings
}

func newBubble(t *testing.T, o Options) *bubble {
	t.Helper()
	b := &bubble{t: t, clk: clocktesting.NewFakeClock(t0), log: &bytes.Buffer{}}
	o.Clock = b.clk
	o.Logger = slog.New(slog.NewTextHandler(b.log, nil))
	if o.Process == (Process{}) {
		o.Process = driver1
	}
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	b.w = w
	synctest.Wait()
	return b
}

// write writes each piece, letting the shipper act after each.
func (b *bubble) write(pieces ...string) {
	for _, p := range pieces {
		if n, err := b.w.Write([]byte(p)); n != len(p) || err != nil {
			b.t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
		synctest.Wait()
	}
}

func (b *bubble) step(d time.Duration) {
	b.clk.Step(d)
	synctest.Wait()
}

func (b *bubble) close() {
	b.t.Helper()
	if err := b.w.Close(context.Background()); err != nil {
		b.t.Fatal(err)
	}
}

// readLog reads p's whole kept log.
func readLog(t *testing.T, sink Sink, p Process) string {
	t.Helper()
	r, err := Open(context.Background(), sink, p, ReadOptions{Tail: AllLines})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lines makes n lines "<prefix>-<i>", each padded with dots to width
// bytes with its newline.
func lines(prefix string, from, n, width int) []string {
	var out []string
	for i := from; i < from+n; i++ {
		l := fmt.Sprintf("%s-%03d", prefix, i)
		out = append(out, l+strings.Repeat(".", width-len(l)-1)+"\n")
	}
	return out
}
