package eventlog

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/events"
)

// A line over the cap is refused, naming it, before more of it is held;
// lines under it are read whole, even when longer than the reader's
// buffer.
func TestLongEventLogLineIsRefused(t *testing.T) {
	line := func(name string) []byte {
		b, err := events.Marshal(&events.AppStart{AppID: "app-1", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	long := strings.Repeat("n", 600<<10) // over the 256 KiB buffer
	cases := []struct {
		name    string
		maxLine int
		wantErr string
		wantLen int // of the names read
	}{
		{name: "under the cap", maxLine: 1 << 20, wantLen: len(long)},
		{name: "over the cap", maxLine: 512 << 10, wantErr: "line 2: event log line over the cap of 524288 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var in bytes.Buffer
			in.Write(line("short"))
			in.Write(line(long))
			var names []string
			var st Stats
			err := replayStream(&in, true, false, c.maxLine, func(e events.Event) {
				names = append(names, e.(*events.AppStart).Name)
			}, &st)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr || !errors.Is(err, errLongLine) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != 2 || names[0] != "short" || len(names[1]) != c.wantLen {
				t.Fatalf("read %d events, want 2 with names of 5 and %d bytes", len(names), c.wantLen)
			}
		})
	}
}
