package appimage

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// WriteRootFS writes s's file system into dir, a new or empty directory:
// every layer in turn, with the modes and owners the image records and
// every timestamp Epoch. The Dockerfile's final stage copies it (COPY
// --from keeps owners and modes), so giving /home/nonroot to nonroot needs
// root, as `docker build` runs it.
func (s Spec) WriteRootFS(dir string) error {
	layers, err := s.checked()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("root file system: %w", err)
	}
	if entries, err := os.ReadDir(dir); err != nil {
		return fmt.Errorf("root file system: %w", err)
	} else if len(entries) > 0 {
		return fmt.Errorf("root file system %s is not empty; expected a new or empty directory", dir)
	}
	// The metadata of each path as the top layer that has it leaves it.
	final := map[string]File{}
	for _, files := range layers {
		for _, f := range files {
			p := filepath.Join(dir, filepath.FromSlash(f.Path))
			if f.Mode.IsDir() {
				err = os.Mkdir(p, 0o700)
				if errors.Is(err, fs.ErrExist) {
					err = nil // from a layer below; this layer's mode wins
				}
			} else {
				err = os.WriteFile(p, f.Data, 0o600)
			}
			if err != nil {
				return fmt.Errorf("root file system: %w", err)
			}
			final[f.Path] = f
		}
	}
	// Modes, owners and times last, children first: a directory's own time
	// changes while files are written into it, and after it is given to
	// nonroot only root could still write in it.
	for _, path := range slices.Backward(slices.Sorted(maps.Keys(final))) {
		f := final[path]
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.Lchown(p, f.UID, f.GID); err != nil {
			if errors.Is(err, syscall.EPERM) {
				return fmt.Errorf("root file system: giving %s to %d:%d needs root (docker build runs as root): %w", f.Path, f.UID, f.GID, err)
			}
			return fmt.Errorf("root file system: %w", err)
		}
		// After chown, which clears the set-id bits.
		if err := os.Chmod(p, f.Mode&(fs.ModePerm|fs.ModeSticky|fs.ModeSetuid|fs.ModeSetgid)); err != nil {
			return fmt.Errorf("root file system: %w", err)
		}
		if err := os.Chtimes(p, Epoch, Epoch); err != nil {
			return fmt.Errorf("root file system: %w", err)
		}
	}
	return nil
}
