package eventlog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"

	"github.com/drover-project/drover/internal/events"
)

// A line over the cap is refused, naming its file and line, before more
// of it is held; lines under it are read whole, even when longer than the
// reader's buffer. The logs are real files, found by List, plain and
// compressed.
func TestLongEventLogLineIsRefused(t *testing.T) {
	line := func(name string) []byte {
		b, err := events.Marshal(&events.AppStart{AppID: "app-1", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	long := strings.Repeat("n", 600<<10) // over the 256 KiB buffer
	var content bytes.Buffer
	content.Write(line("short"))
	content.Write(line(long))
	content.Write(line("after"))
	zstdContent := func() []byte {
		var b bytes.Buffer
		z, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		z.Write(content.Bytes())
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}()
	cases := []struct {
		name    string
		file    string
		data    []byte
		maxLine int
		wantErr string // after the file's path
		want    []int  // the lengths of the names read
	}{
		{name: "under the cap", file: "app-1", data: content.Bytes(), maxLine: 1 << 20, want: []int{5, len(long), 5}},
		{name: "over the cap", file: "app-1", data: content.Bytes(), maxLine: 512 << 10, want: []int{5},
			wantErr: ": line 2: event log line over the cap of 524288 bytes"},
		{name: "over the cap, compressed", file: "app-1.zstd", data: zstdContent, maxLine: 512 << 10, want: []int{5},
			wantErr: ": line 2: event log line over the cap of 524288 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.file)
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			logs, err := List(context.Background(), dir, nil)
			if err != nil || len(logs) != 1 {
				t.Fatalf("List = %v, %v; want one log", logs, err)
			}
			l := logs[0]
			l.maxLine = c.maxLine
			var got []int
			_, err = Replay(context.Background(), l, func(e events.Event) {
				got = append(got, len(e.(*events.AppStart).Name))
			})
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if want := "reading " + path + c.wantErr; err == nil || err.Error() != want || !errors.Is(err, errLongLine) {
				t.Errorf("err = %v, want %q", err, want)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("lengths of the names read (-want +got):\n%s", diff)
			}
		})
	}
}
