package keptlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/objstore"
)

// Tail is the last lines of what is kept, as kubectl logs --tail, across
// files and with the cut marker when it reaches back to the start.
func TestKeptLogsTail(t *testing.T) {
	all := lines("line", 0, 40, 10) // 400 bytes; chunks of 50 bytes
	whole := strings.Join(all, "")
	const cut = "[drover: 100 bytes of this log were cut to keep it under the cap]\n"
	for _, tc := range []struct {
		name     string
		appends  bool
		maxBytes int64
		tail     int
		want     string
	}{
		{name: "all", tail: AllLines, want: whole},
		{name: "none", tail: 0, want: ""},
		{name: "one", tail: 1, want: all[39]},
		{name: "within a chunk", tail: 3, want: strings.Join(all[37:], "")},
		{name: "across chunks", tail: 12, want: strings.Join(all[28:], "")},
		{name: "more than kept", tail: 100, want: whole},
		{name: "appended files", appends: true, tail: 12, want: strings.Join(all[28:], "")},
		{name: "cut, all", maxBytes: 300, tail: AllLines, want: cut + whole[100:]},
		{name: "cut, reaching the start", maxBytes: 300, tail: 31, want: cut + whole[100:]},
		{name: "cut, short of the start", maxBytes: 300, tail: 30, want: whole[100:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := newMemSink(tc.appends)
				b := newBubble(t, Options{Sink: sink, MaxChunk: 50, MaxMemory: 1000, MaxBytes: tc.maxBytes, SegmentBytes: 100})
				b.write(all...)
				b.close()
				r, err := Open(context.Background(), sink, driver1, ReadOptions{Tail: tc.tail})
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, string(got)); diff != "" {
					t.Errorf("tail %d (-want +got):\n%s", tc.tail, diff)
				}
			})
		})
	}
}

// Following a log gives what is shipped as the reader polls, until the
// process closes its log; or until the context ends.
func TestKeptLogsFollow(t *testing.T) {
	for _, appends := range []bool{false, true} {
		t.Run(fmt.Sprintf("appends=%v", appends), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := newMemSink(appends)
				b := newBubble(t, Options{Sink: sink})
				b.write("first\n", "second\n")
				b.step(5 * time.Second)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				r, err := Open(ctx, sink, driver1, ReadOptions{Tail: 1, Follow: true, Clock: b.clk})
				if err != nil {
					t.Fatal(err)
				}
				got := make(chan string, 100)
				ended := make(chan error, 1)
				go func() {
					sc := bufio.NewScanner(r)
					for sc.Scan() {
						got <- sc.Text()
					}
					ended <- sc.Err()
				}()
				received := func() []string {
					synctest.Wait()
					var out []string
					for {
						select {
						case l := <-got:
							out = append(out, l)
						default:
							return out
						}
					}
				}
				if diff := cmp.Diff([]string{"second"}, received()); diff != "" {
					t.Errorf("the tail (-want +got):\n%s", diff)
				}
				b.write("third\n")
				b.step(5 * time.Second) // shipped
				b.step(DefaultPoll)     // polled since
				if diff := cmp.Diff([]string{"third"}, received()); diff != "" {
					t.Errorf("after an interval (-want +got):\n%s", diff)
				}
				b.write("fourth\n")
				b.close()
				b.step(DefaultPoll)
				if diff := cmp.Diff([]string{"fourth"}, received()); diff != "" {
					t.Errorf("after Close (-want +got):\n%s", diff)
				}
				if err := <-ended; err != nil {
					t.Errorf("following a closed log ended with %v", err)
				}
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		sink := newMemSink(false)
		b := newBubble(t, Options{Sink: sink})
		b.write("only\n")
		b.step(5 * time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		r, err := Open(ctx, sink, driver1, ReadOptions{Tail: AllLines, Follow: true, Clock: b.clk})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := io.ReadAll(r)
			done <- err
		}()
		b.step(10 * DefaultPoll)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("following until the context ends: %v", err)
		}
		b.close()
	})
}

// A chunk cut short (its writer killed while appending) ends its file
// quietly; damage is marked and the file skipped; a file gone missing
// between others shows as a gap.
func TestKeptLogsDamage(t *testing.T) {
	enc := func(off int64, s string) []byte {
		b, err := encode(member{off: off, data: []byte(s)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	a, b, c := enc(0, "a\n"), enc(2, "b\n"), enc(4, "c\n")
	bad := slices.Clone(b)
	bad[len(bad)-6] ^= 0xff // the CRC-32
	for _, tc := range []struct {
		name  string
		files map[int64][]byte
		want  string
	}{
		{name: "incomplete last chunk", files: map[int64][]byte{0: cat(a, b, c[:len(c)-3])}, want: "a\nb\n"},
		{name: "incomplete chunk before the next file", files: map[int64][]byte{0: cat(a, b[:5]), 4: c},
			want: "a\n[drover: 2 bytes of this log are missing here]\nc\n"},
		{name: "damaged chunk", files: map[int64][]byte{0: cat(a, bad, c)},
			want: "a\n[drover: mem:/" + logDir + "0000000000000000.log.gz is damaged from byte " + fmt.Sprint(len(a)) +
				" (gzip: invalid checksum); the rest of that file is skipped]\n"},
		{name: "missing file", files: map[int64][]byte{2: b, 4: c}, want: "[drover: 2 bytes of this log were cut to keep it under the cap]\nb\nc\n"},
		{name: "foreign gzip", files: map[int64][]byte{0: cat(a, gzipped("plain\n"))}, want: "a\nplain\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := newMemSink(true)
			for off, data := range tc.files {
				sink.set(logDir+fileName(off), data)
			}
			if diff := cmp.Diff(tc.want, readLog(t, sink, driver1)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

func gzipped(s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	return buf.Bytes()
}

// On a local directory, the layout is the documented one; each file is a
// gzip stream of its chunks that gzip -dc reads.
func TestKeptLogsLocalLayout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		sink, err := OpenSink("file://"+dir, objstore.Config{})
		if err != nil {
			t.Fatal(err)
		}
		exec := Process{AppID: driver1.AppID, Executor: 7, Attempt: 2}
		all := lines("line", 0, 30, 10)
		for _, p := range []Process{driver1, exec} {
			b := newBubble(t, Options{Sink: sink, Process: p, MaxChunk: 50, MaxMemory: 1000, SegmentBytes: 100})
			b.write(all...)
			b.close()
		}
		var files []string
		err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		app := driver1.AppID + "/"
		want := []string{app + "driver-a1/0000000000000000.log.gz", app + "driver-a1/0000000000000100.log.gz",
			app + "driver-a1/0000000000000200.log.gz", app + "executor-7-a2/0000000000000000.log.gz",
			app + "executor-7-a2/0000000000000100.log.gz", app + "executor-7-a2/0000000000000200.log.gz",
			app + "processes/driver-a1", app + "processes/executor-7-a2"}
		if diff := cmp.Diff(want, files); diff != "" {
			t.Errorf("files (-want +got):\n%s", diff)
		}
		var got bytes.Buffer
		for _, f := range want[3:6] {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(&got, zr); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(strings.Join(all, ""), got.String()); diff != "" {
			t.Errorf("the executor's files through gzip (-want +got):\n%s", diff)
		}
		if got := readLog(t, sink, exec); got != strings.Join(all, "") {
			t.Errorf("the executor's log: %q", got)
		}
	})
}

// A bad directory or process is refused with what was expected; a process
// with nothing kept is ErrNoLog.
func TestKeptLogsBadInput(t *testing.T) {
	for _, tc := range []struct {
		dir     string
		want    Sink
		wantErr string
	}{
		{dir: "/var/log/drover", want: LocalSink("/var/log/drover")},
		{dir: "logs/kept/", want: LocalSink("logs/kept")},
		{dir: "file:///var/log/drover", want: LocalSink("/var/log/drover")},
		{dir: "file:/var/log/drover", want: LocalSink("/var/log/drover")},
		{dir: "s3a://logs-bucket/kept", want: &S3Sink{Base: objstore.URI{Bucket: "logs-bucket", Key: "kept"}}},
		{dir: "s3://logs-bucket", want: &S3Sink{Base: objstore.URI{Bucket: "logs-bucket"}}},
		{dir: "", wantErr: `kept log directory: empty (expected a local path, file://, s3:// or s3a://)`},
		{dir: "hdfs://nn:8020/logs", wantErr: `kept log directory "hdfs://nn:8020/logs": unsupported scheme hdfs:// (expected a local path, file://, s3:// or s3a://)`},
		{dir: "file:", wantErr: `kept log directory "file:": no path after file: (expected file:///dir)`},
		{dir: "s3://", wantErr: `kept log directory: path "s3://": no bucket name`},
		{dir: "s3://Logs_Bucket/x", wantErr: `bucket name "Logs_Bucket" may hold only lowercase letters, digits, dots and hyphens`},
	} {
		got, err := OpenSink(tc.dir, objstore.Config{})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("OpenSink(%q) = %v, %v; want error %q", tc.dir, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("OpenSink(%q): %v", tc.dir, err)
			continue
		}
		if s3, ok := got.(*S3Sink); ok {
			if s3.Store == nil {
				t.Errorf("OpenSink(%q): no store", tc.dir)
			}
			s3.Store = nil
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("OpenSink(%q) (-want +got):\n%s", tc.dir, diff)
		}
	}

	sink := newMemSink(false)
	for _, tc := range []struct {
		opts    Options
		wantErr string
	}{
		{opts: Options{Process: driver1}, wantErr: "kept log: no sink"},
		{opts: Options{Sink: sink, Process: Process{AppID: "../etc", Attempt: 1}}, wantErr: `application id "../etc": only letters`},
		{opts: Options{Sink: sink, Process: Process{AppID: "app-1"}}, wantErr: "attempt 0 of driver: attempts are numbered from 1"},
		{opts: Options{Sink: sink, Process: Process{AppID: "app-1", Executor: -1, Attempt: 1}}, wantErr: "executor id -1"},
		{opts: Options{Sink: sink, Process: driver1, MaxMemory: 100, MaxChunk: 60}, wantErr: "a chunk may take at most half of it"},
		{opts: Options{Sink: sink, Process: driver1, Interval: -time.Second}, wantErr: "negative setting"},
	} {
		w, err := New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("New(%+v) = %v; want error %q", tc.opts, err, tc.wantErr)
		}
		if w != nil {
			w.Close(context.Background())
		}
	}

	if _, err := Open(context.Background(), sink, driver1, ReadOptions{}); !errors.Is(err, ErrNoLog) ||
		!strings.Contains(err.Error(), "no kept log of the driver (attempt 1) of application drover-0123456789abcdef in mem:/drover-0123456789abcdef") {
		t.Errorf("Open of a process with nothing kept: %v", err)
	}
}
