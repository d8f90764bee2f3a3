package commit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/dataflow"
)

// writeParts is a job of two partitions writing "x" each.
func writeParts(ran *int) Run {
	return func(out dataflow.Output, onResult func(int, []byte) error) error {
		*ran++
		for p := range 2 {
			name := "attempt-" + string(rune('0'+p))
			if err := os.WriteFile(filepath.Join(out.Dir, name), []byte("x"), 0o644); err != nil {
				return err
			}
			if err := onResult(p, []byte(name)); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestSaveToDirAfterARestart: a restarted driver recognises the output its
// earlier attempt committed, by application and lineage, and does not
// write it again; any other existing output is still an error; a
// superseded attempt commits nothing.
func TestSaveToDirAfterARestart(t *testing.T) {
	first := Options{Action: "save", Partitions: 2, AppID: "app-1", Lineage: "l1", Attempt: 0}
	for name, tc := range map[string]struct {
		before  *Options // the earlier commit, if any
		again   Options
		wantErr string
		// wantRan is how often the second job ran; wantReused whether it
		// was reported reused.
		wantRan    int
		wantReused bool
	}{
		"committed by the earlier attempt": {before: &first, again: withAttempt(first, 1), wantReused: true},
		"committed by another application": {before: &first, again: func() Options { o := withAttempt(first, 1); o.AppID = "app-2"; return o }(),
			wantErr: "save: output directory"},
		"another dataset of the application": {before: &first, again: func() Options { o := withAttempt(first, 1); o.Lineage = "l2"; return o }(),
			wantErr: "save: output directory"},
		"a driver that does not restart": {before: &first, again: Options{Action: "save", Partitions: 2, AppID: "app-1"},
			wantErr: "save: output directory"},
		"superseded before its commit": {again: func() Options {
			o := withAttempt(first, 1)
			o.Fence = func(context.Context) error { return errors.New("attempt 2 runs") }
			return o
		}(), wantErr: "save: a newer attempt of the driver runs: attempt 2 runs", wantRan: 1},
	} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			ran := 0
			var marker []byte
			if tc.before != nil {
				if err := Save(context.Background(), dir, nil, dataflow.Output{Ext: ".txt"}, writeParts(&ran), *tc.before); err != nil {
					t.Fatal(err)
				}
				var err error
				if marker, err = os.ReadFile(filepath.Join(dir, SuccessFile)); err != nil {
					t.Fatal(err)
				}
				ran = 0
			}
			reused := false
			tc.again.Reused = func(string) { reused = true }
			err := Save(context.Background(), dir, nil, dataflow.Output{Ext: ".txt"}, writeParts(&ran), tc.again)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one starting with %q", err, tc.wantErr)
			}
			if ran != tc.wantRan || reused != tc.wantReused {
				t.Errorf("the job ran %d times, reused %v; want %d, %v", ran, reused, tc.wantRan, tc.wantReused)
			}
			if tc.before == nil {
				if entries, _ := os.ReadDir(parent); len(entries) != 0 {
					t.Errorf("a superseded attempt left %v", entries)
				}
				return
			}
			// The earlier attempt's output is as it was.
			if got, err := os.ReadFile(filepath.Join(dir, SuccessFile)); err != nil || string(got) != string(marker) {
				t.Errorf("_SUCCESS now %q (%v), was %q", got, err, marker)
			}
		})
	}
}

func withAttempt(o Options, attempt int64) Options { o.Attempt = attempt; return o }

// TestSuccessMarker: _SUCCESS is empty, as Hadoop's, unless the output has
// a lineage; then it names the application, the attempt and the lineage.
func TestSuccessMarker(t *testing.T) {
	if b := (Options{AppID: "a"}).success(); b != nil {
		t.Errorf("without a lineage _SUCCESS holds %q", b)
	}
	o := Options{AppID: "app-1", Lineage: "abc", Attempt: 2}
	if diff := cmp.Diff(`{"committer":"drover","application":"app-1","attempt":2,"lineage":"abc"}`+"\n", string(o.success())); diff != "" {
		t.Errorf("_SUCCESS (-want +got):\n%s", diff)
	}
	if !o.committedBefore(o.success()) || o.committedBefore([]byte("{}")) || o.committedBefore(nil) {
		t.Error("committedBefore does not recognise exactly its own marker")
	}
}
