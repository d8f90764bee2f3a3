package eventlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/drover-project/drover/internal/objstore"
)

// storage is the directory logs are written to: a local directory, or a
// prefix in an object store.
type storage interface {
	// create starts a file at name (relative to the directory); it
	// exists, growing, once created.
	create(ctx context.Context, name string) (io.WriteCloser, error)
	// put writes a small file at once.
	put(ctx context.Context, name string, data []byte) error
	rename(ctx context.Context, from, to string) error
	// remove removes a file or a directory with everything in it; a
	// missing one is no error.
	remove(ctx context.Context, name string) error
	exists(ctx context.Context, name string) (bool, error)
	mkdir(ctx context.Context, name string) error
	// whole says whether files appear only once closed (objects), so a
	// log needs no in-progress name: it is written under its final one.
	whole() bool
	// path is name's full path, for messages.
	path(name string) string
	// entries are the directory's files and those of its rolled logs'
	// directories.
	entries(ctx context.Context) ([]entry, error)
	open(ctx context.Context, name string) (io.ReadCloser, error)
}

// openStorage returns the storage of dir: a local path, a file: URI or an
// s3:// (s3a://) prefix, which needs store.
func openStorage(dir string, store *objstore.Store) (storage, error) {
	if local, ok := localPath(dir); ok {
		return localDir(local), nil
	}
	u, err := objstore.Parse(dir)
	if err != nil {
		return nil, err
	}
	if store == nil {
		return nil, fmt.Errorf("event log directory %s: no object-store client", dir)
	}
	return s3Dir{store: store, base: u}, nil
}

// localPath is dir as a local path when it is one: a plain path, or a
// file: URI (file:/tmp/x, file:///tmp/x), as Spark's default
// spark.eventLog.dir is written.
func localPath(dir string) (string, bool) {
	if rest, ok := strings.CutPrefix(dir, "file:"); ok {
		// file:///tmp → /tmp; file:/tmp → /tmp.
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			rest = after
		}
		return rest, true
	}
	if objstore.HasScheme(dir) {
		return "", false
	}
	return dir, true
}

// localDir is a directory of the local file system.
type localDir string

func (d localDir) path(name string) string { return filepath.Join(string(d), filepath.FromSlash(name)) }

func (d localDir) create(_ context.Context, name string) (io.WriteCloser, error) {
	return os.OpenFile(d.path(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o660)
}

func (d localDir) put(_ context.Context, name string, data []byte) error {
	return os.WriteFile(d.path(name), data, 0o660)
}

func (d localDir) rename(_ context.Context, from, to string) error {
	return os.Rename(d.path(from), d.path(to))
}

func (d localDir) remove(_ context.Context, name string) error { return os.RemoveAll(d.path(name)) }

func (d localDir) exists(_ context.Context, name string) (bool, error) {
	_, err := os.Stat(d.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// mkdir also creates the log directory itself when missing: Spark requires
// it to exist, but a driver pod's /tmp/spark-events never does.
func (d localDir) mkdir(_ context.Context, name string) error {
	return os.MkdirAll(d.path(name), 0o770)
}

func (localDir) whole() bool { return false }

func (d localDir) entries(context.Context) ([]entry, error) {
	var out []entry
	add := func(rel string, e fs.DirEntry) {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			out = append(out, entry{rel: rel, size: info.Size(), modified: info.ModTime()})
		}
	}
	top, err := os.ReadDir(string(d))
	if err != nil {
		return nil, err
	}
	for _, e := range top {
		if !e.IsDir() {
			add(e.Name(), e)
			continue
		}
		if !strings.HasPrefix(e.Name(), rollingDirPrefix) {
			continue
		}
		sub, err := os.ReadDir(d.path(e.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range sub {
			add(e.Name()+"/"+f.Name(), f)
		}
	}
	return out, nil
}

func (d localDir) open(_ context.Context, name string) (io.ReadCloser, error) {
	return os.Open(d.path(name))
}

// s3Dir is a prefix of an object store.
type s3Dir struct {
	store *objstore.Store
	base  objstore.URI
}

func (d s3Dir) uri(name string) objstore.URI { return d.base.Join(name) }

func (d s3Dir) path(name string) string { return d.uri(name).String() }

func (d s3Dir) create(ctx context.Context, name string) (io.WriteCloser, error) {
	return d.store.Upload(ctx, d.uri(name))
}

func (d s3Dir) put(ctx context.Context, name string, data []byte) error {
	return d.store.Put(ctx, d.uri(name), data)
}

func (d s3Dir) rename(ctx context.Context, from, to string) error {
	if err := d.store.Copy(ctx, d.uri(from), d.uri(to)); err != nil {
		return err
	}
	return d.store.Delete(ctx, d.uri(from))
}

func (d s3Dir) remove(ctx context.Context, name string) error {
	if err := d.store.RemovePrefix(ctx, d.uri(name)); err != nil {
		return err
	}
	return d.store.Delete(ctx, d.uri(name))
}

func (d s3Dir) exists(ctx context.Context, name string) (bool, error) {
	return d.store.Exists(ctx, d.uri(name))
}

// mkdir does nothing: prefixes need no creating.
func (s3Dir) mkdir(context.Context, string) error { return nil }

func (s3Dir) whole() bool { return true }

func (d s3Dir) entries(ctx context.Context) ([]entry, error) {
	objs, err := d.store.ListTree(ctx, d.base)
	if err != nil {
		return nil, err
	}
	prefix := d.base.Join("").Key
	var out []entry
	for _, o := range objs {
		rel := strings.TrimPrefix(o.URI.Key, prefix)
		if strings.Count(rel, "/") <= 1 {
			out = append(out, entry{rel: rel, size: o.Size, modified: o.Modified})
		}
	}
	return out, nil
}

func (d s3Dir) open(ctx context.Context, name string) (io.ReadCloser, error) {
	return d.store.OpenRange(ctx, d.uri(name), "", 0, -1)
}
