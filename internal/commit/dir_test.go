package commit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/dataflow"
)

// TestCommitPartsRejectsPaths: a partition file name from an executor
// that is a path fails the commit, and moves nothing.
func TestCommitPartsRejectsPaths(t *testing.T) {
	for _, name := range []string{"../victim", "..", ".", "", "a/b", `a\\b`, "/etc/passwd"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			attempts, staging := filepath.Join(root, "staging", "_temporary"), filepath.Join(root, "staging")
			if err := os.MkdirAll(attempts, 0o755); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(staging, "victim")
			if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(attempts, "good"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := commitParts(attempts, staging, []string{"good", name}, "")
			if err == nil || !strings.Contains(err.Error(), "partition 1") {
				t.Fatalf("commitParts with %q: %v, want an error naming partition 1", name, err)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Errorf("the file outside the attempts directory moved: %v", err)
			}
			if _, err := os.Stat(filepath.Join(staging, "part-00000")); err == nil {
				t.Error("a partition was committed although another's name was bad")
			}
		})
	}
}

// TestSaveToDir: a job's files appear as part-NNNNN and _SUCCESS at once,
// and a failed job or a taken directory leaves nothing.
func TestSaveToDir(t *testing.T) {
	jobFailed := errors.New("job 1 failed")
	testCases := map[string]struct {
		exists  bool
		jobErr  error
		want    []string
		wantErr string
	}{
		"committed":              {want: []string{"_SUCCESS", "part-00000.txt", "part-00001.txt"}},
		"the job fails":          {jobErr: jobFailed, wantErr: "job 1 failed"},
		"the directory is there": {exists: true, wantErr: "save: output directory"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			if tc.exists {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			run := func(out dataflow.Output, onResult func(int, []byte) error) error {
				for p := range 2 {
					name := fmt.Sprintf("attempt-%d", p)
					if err := os.WriteFile(filepath.Join(out.Dir, name), []byte("x"), 0o644); err != nil {
						return err
					}
					if err := onResult(p, []byte(name)); err != nil {
						return err
					}
				}
				return tc.jobErr
			}
			err := Save(context.Background(), dir, nil, dataflow.Output{Ext: ".txt"}, run, Options{Action: "save", Partitions: 2})
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one starting with %q", err, tc.wantErr)
				}
				if tc.jobErr != nil && !errors.Is(err, tc.jobErr) {
					t.Errorf("error %v does not wrap the job's", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			var got []string
			if entries, err := os.ReadDir(dir); err == nil {
				for _, e := range entries {
					got = append(got, e.Name())
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("files in the output (-want +got):\n%s", diff)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 1 && !(len(entries) == 0 && !tc.exists) {
				t.Errorf("entries beside the output: %v", entries)
			}
		})
	}
}
