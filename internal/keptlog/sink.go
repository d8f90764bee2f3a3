package keptlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/drover-project/drover/internal/objstore"
)

// Sink is where kept logs are stored: a local directory or an object-store
// prefix. Names are slash-separated and relative to the sink's base.
// Implementations are safe for concurrent use.
type Sink interface {
	// Put writes data as the file name, whole, replacing any.
	Put(ctx context.Context, name string, data []byte) error
	// Append adds data at the end of the file name, creating it: all of
	// data or, as far as the sink can tell, nothing. Only when Appends.
	Append(ctx context.Context, name string, data []byte) error
	// Appends reports whether Append works; an object store cannot append,
	// so each chunk is its own object there.
	Appends() bool
	// List returns every file under the directory dir, at any depth, in
	// name order. A missing directory has none.
	List(ctx context.Context, dir string) ([]File, error)
	// Open reads the file name from byte off to its end.
	Open(ctx context.Context, name string, off int64) (io.ReadCloser, error)
	// Delete deletes files; missing ones are no error.
	Delete(ctx context.Context, names ...string) error
	// Path is name's full path or URI, for messages.
	Path(name string) string
}

// File is a listed file.
type File struct {
	Name string // relative to the sink's base
	Size int64
}

// OpenSink returns the sink of dir: a local path or file: URI (file:///x,
// file:/x), or an s3:// or s3a:// prefix reached with cfg. Nothing is read
// or created yet: a directory that is only wrong on disk or in the store
// shows when the first chunk is shipped or the first listing made.
func OpenSink(dir string, cfg objstore.Config) (Sink, error) {
	if strings.TrimSpace(dir) == "" {
		return nil, errors.New("kept log directory: empty (expected a local path, file://, s3:// or s3a://)")
	}
	if local, ok := localPath(dir); ok {
		if local == "" {
			return nil, fmt.Errorf("kept log directory %q: no path after file: (expected file:///dir)", dir)
		}
		return LocalSink(filepath.Clean(local)), nil
	}
	scheme, _, _ := strings.Cut(dir, "://")
	switch strings.ToLower(scheme) {
	case "s3", "s3a":
	default:
		return nil, fmt.Errorf("kept log directory %q: unsupported scheme %s:// (expected a local path, file://, s3:// or s3a://)", dir, scheme)
	}
	u, err := objstore.Parse(dir)
	if err != nil {
		return nil, fmt.Errorf("kept log directory: %w", err)
	}
	return &S3Sink{Store: objstore.New(cfg), Base: u}, nil
}

// localPath is dir as a local path when it is one: a plain path, or a
// file: URI as Spark writes its directories.
// IsLocal reports whether dir is a local directory (a path or file:),
// which OpenSink serves without an object store.
func IsLocal(dir string) bool {
	_, ok := localPath(dir)
	return ok
}

func localPath(dir string) (string, bool) {
	if rest, ok := strings.CutPrefix(dir, "file:"); ok {
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			rest = after
		}
		return rest, true
	}
	return dir, !objstore.HasScheme(dir)
}

// LocalSink is a directory of the local file system. A process's chunks are
// appended to its current file; directories are made as needed.
type LocalSink string

// Path implements Sink.
func (d LocalSink) Path(name string) string {
	return filepath.Join(string(d), filepath.FromSlash(name))
}

// Put implements Sink.
func (d LocalSink) Put(_ context.Context, name string, data []byte) error {
	p := d.Path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o770); err != nil {
		return fmt.Errorf("creating the directory of %s: %w", p, err)
	}
	if err := os.WriteFile(p, data, 0o660); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// Append implements Sink. A failed write is cut off again, so a retry does
// not leave half a chunk in the middle of the file.
func (d LocalSink) Append(_ context.Context, name string, data []byte) error {
	p := d.Path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o770); err != nil {
		return fmt.Errorf("creating the directory of %s: %w", p, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o660)
	if err != nil {
		return fmt.Errorf("appending to %s: %w", p, err)
	}
	st, err := f.Stat()
	if err == nil {
		_, err = f.Write(data)
		if err != nil {
			_ = f.Truncate(st.Size())
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("appending to %s: %w", p, err)
	}
	return nil
}

// Appends implements Sink.
func (LocalSink) Appends() bool { return true }

// List implements Sink.
func (d LocalSink) List(_ context.Context, dir string) ([]File, error) {
	var out []File
	root := d.Path(dir)
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // deleted while listed
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(string(d), p)
		if err != nil {
			return err
		}
		out = append(out, File{Name: filepath.ToSlash(rel), Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", root, err)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Open implements Sink.
func (d LocalSink) Open(_ context.Context, name string, off int64) (io.ReadCloser, error) {
	f, err := os.Open(d.Path(name))
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Delete implements Sink.
func (d LocalSink) Delete(_ context.Context, names ...string) error {
	var errs []error
	for _, n := range names {
		if err := os.Remove(d.Path(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// S3Sink is a prefix of an object store. Objects are written whole, one per
// chunk.
type S3Sink struct {
	Store *objstore.Store
	Base  objstore.URI
}

func (s *S3Sink) uri(name string) objstore.URI { return s.Base.Join(name) }

// Path implements Sink.
func (s *S3Sink) Path(name string) string { return s.uri(name).String() }

// Put implements Sink.
func (s *S3Sink) Put(ctx context.Context, name string, data []byte) error {
	return s.Store.Put(ctx, s.uri(name), data)
}

// Append implements Sink: an object store has no append.
func (s *S3Sink) Append(context.Context, string, []byte) error {
	return fmt.Errorf("appending to %s: %w", s.Base, errors.ErrUnsupported)
}

// Appends implements Sink.
func (*S3Sink) Appends() bool { return false }

// List implements Sink.
func (s *S3Sink) List(ctx context.Context, dir string) ([]File, error) {
	objs, err := s.Store.ListTree(ctx, s.uri(dir))
	if err != nil {
		return nil, err
	}
	// Names are relative to Base: strip its key, with the / Join adds.
	prefix := s.uri("x").Key
	prefix = prefix[:len(prefix)-1]
	out := make([]File, 0, len(objs))
	for _, o := range objs {
		if name, ok := strings.CutPrefix(o.URI.Key, prefix); ok && path.Clean(name) == name {
			out = append(out, File{Name: name, Size: o.Size})
		}
	}
	return out, nil
}

// Open implements Sink.
func (s *S3Sink) Open(ctx context.Context, name string, off int64) (io.ReadCloser, error) {
	return s.Store.OpenRange(ctx, s.uri(name), "", off, -1)
}

// Delete implements Sink.
func (s *S3Sink) Delete(ctx context.Context, names ...string) error {
	uris := make([]objstore.URI, len(names))
	for i, n := range names {
		uris[i] = s.uri(n)
	}
	return s.Store.Delete(ctx, uris...)
}
