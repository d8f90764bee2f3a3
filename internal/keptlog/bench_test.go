package keptlog

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/drover-project/drover/internal/objstore"
)

// BenchmarkKeptLogsWrite measures what keeping a log adds to the process
// that writes it: Write of a 120-byte line into a Writer over a local
// directory (one goroutine, and all of them at once), and a slog line teed
// into one beside slog alone. The shipper compresses and writes on its own
// goroutine; output faster than it (hundreds of MB/s here) is dropped,
// reported as dropped-%.
func BenchmarkKeptLogsWrite(b *testing.B) {
	line := []byte("time=2026-05-01T12:00:00.000Z level=INFO msg=\"task finished\" stage=3 task=1234 executor=7 ms=15 ok=true\n")
	run := func(b *testing.B, body func(w *Writer)) {
		sink, err := OpenSink(b.TempDir(), objstore.Config{})
		if err != nil {
			b.Fatal(err)
		}
		w, err := New(Options{Sink: sink, Process: driver1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		body(w)
		b.StopTimer()
		if err := w.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		st := w.Stats()
		if total := st.BytesShipped + st.BytesDropped; total > 0 {
			b.ReportMetric(100*float64(st.BytesDropped)/float64(total), "dropped-%")
		}
	}
	b.Run("write", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		run(b, func(w *Writer) {
			for b.Loop() {
				w.Write(line)
			}
		})
	})
	b.Run("write-parallel", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		run(b, func(w *Writer) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					w.Write(line)
				}
			})
		})
	})
	attrs := []any{"stage", 3, "task", 1234, "executor", 7, "ms", 15, "ok", true}
	b.Run("slog-alone", func(b *testing.B) {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		b.ReportAllocs()
		for b.Loop() {
			log.Info("task finished", attrs...)
		}
	})
	b.Run("slog-teed", func(b *testing.B) {
		run(b, func(w *Writer) {
			log := slog.New(slog.NewTextHandler(io.MultiWriter(io.Discard, w), nil))
			for b.Loop() {
				log.Info("task finished", attrs...)
			}
		})
	})
}
