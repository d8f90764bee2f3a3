package eventlog

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// A zstd log declares the window its decoder allocates: one over 8 MiB,
// which nothing drover or Spark writes needs, is refused instead of
// allocated.
func TestZstdWindowIsBounded(t *testing.T) {
	for _, c := range []struct {
		window int
		ok     bool
	}{{window: zstdWindow, ok: true}, {window: 8 << 20, ok: true}, {window: 64 << 20, ok: false}} {
		var buf bytes.Buffer
		w, err := zstd.NewWriter(&buf, zstd.WithWindowSize(c.window), zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		// Written in pieces, so the frame declares its window rather than
		// its content's size.
		for range 4 {
			if _, err := w.Write([]byte(strings.Repeat("x", 64<<10))); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := decompress(&buf, "zstd")
		if err == nil {
			_, err = io.Copy(io.Discard, r)
			r.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("a %d-byte window: err %v, want ok %v", c.window, err, c.ok)
		}
	}
}
