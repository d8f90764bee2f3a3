package commit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drover-project/drover/internal/dataflow"
)

// toDir commits into a local directory, which must not exist: tasks write
// into a hidden sibling's _temporary, their files are renamed to part-NNNNN
// there, and the sibling is renamed to dir once _SUCCESS is in it. A failed
// job removes the sibling.
//
// Errors start with opts.Action, except the job's own, which names itself.
func toDir(dir string, out dataflow.Output, run Run, opts Options) (err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", opts.Action, err)
	}
	if _, err := os.Lstat(dir); err == nil {
		if b, err := os.ReadFile(filepath.Join(dir, SuccessFile)); err == nil && opts.committedBefore(b) {
			opts.reuse(dir)
			return nil
		}
		return fmt.Errorf("%s: output directory %s already exists", opts.Action, dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("%s: %w", opts.Action, err)
	}
	staging := filepath.Join(filepath.Dir(dir), stagingName(filepath.Base(dir)))
	attempts := filepath.Join(staging, "_temporary")
	if err := os.MkdirAll(attempts, 0o755); err != nil {
		return fmt.Errorf("%s: %w", opts.Action, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(staging)
		}
	}()
	out.Dir = attempts
	names := make([]string, opts.Partitions)
	err = run(out, func(p int, b []byte) error {
		names[p] = string(b)
		return nil
	})
	if err != nil {
		return err
	}
	if err := commitParts(attempts, staging, names, out.Ext); err != nil {
		return fmt.Errorf("%s: %w", opts.Action, err)
	}
	if err := os.RemoveAll(attempts); err != nil {
		return fmt.Errorf("%s: %w", opts.Action, err)
	}
	if err := os.WriteFile(filepath.Join(staging, SuccessFile), opts.success(), 0o644); err != nil {
		return fmt.Errorf("%s: %w", opts.Action, err)
	}
	if err := opts.fence(context.Background()); err != nil {
		return fmt.Errorf("%s: %w", opts.Action, err)
	}
	if err := os.Rename(staging, dir); err != nil {
		return fmt.Errorf("%s: committing %s: %w", opts.Action, dir, err)
	}
	return nil
}

// commitParts moves each partition's file, named by its task's result, from
// attempts into staging as part-NNNNN (and ext). The names come from
// executors, so each must be a plain file name in attempts: a path (such
// as ../x) would move a file of the driver's choosing.
func commitParts(attempts, staging string, names []string, ext string) error {
	if err := checkPartNames(names); err != nil {
		return err
	}
	for p, name := range names {
		if err := os.Rename(filepath.Join(attempts, name), filepath.Join(staging, fmt.Sprintf("part-%05d%s", p, ext))); err != nil {
			return fmt.Errorf("committing partition %d: %w", p, err)
		}
	}
	return nil
}

// checkPartNames checks that each name a task returned is a plain file name.
func checkPartNames(names []string) error {
	for p, name := range names {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			return fmt.Errorf("partition %d: its task named the file %q, not a file name in the output's temporary directory", p, name)
		}
	}
	return nil
}

// stagingName is the hidden sibling of output base where a job's tasks
// write: hidden, so no glob or directory listing of the parent reads it.
func stagingName(base string) string {
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	return "." + base + ".drover-" + hex.EncodeToString(suffix)
}
