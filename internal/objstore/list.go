package objstore

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Object is a listed object.
type Object struct {
	URI  URI
	Size int64
	// Modified is when it was last written, as listings report it.
	Modified time.Time
	// ETag names this version of the object: reads given it (OpenRange,
	// NewReaderAt) fail with ErrChanged once the object is rewritten.
	ETag string
}

// List expands a path as TextFile expands a local one: a "directory" (a
// prefix followed by /, or the bucket) is its objects directly under it,
// except hidden ones (names starting with . or _); otherwise the path is a
// glob pattern (path.Match: * and ? do not cross /) over keys, which leaves
// hidden names out too unless its own last part is one, and a plain key
// names one object. The result is sorted by key. No match is an error.
func (s *Store) List(ctx context.Context, p string) ([]Object, error) {
	u, err := Parse(p)
	if err != nil {
		return nil, err
	}
	if _, err := path.Match(u.Key, ""); err != nil {
		return nil, fmt.Errorf("bad pattern %q: %w", p, err)
	}
	c, err := s.s3(ctx)
	if err != nil {
		return nil, err
	}
	meta := strings.IndexAny(u.Key, `*?[\`)
	if meta < 0 {
		// A directory first, as a local path that is a directory is read as one.
		dir := u.Key
		if dir != "" && !strings.HasSuffix(dir, "/") {
			dir += "/"
		}
		objs, n, err := listPrefix(ctx, c, u.Bucket, dir, true)
		if err != nil {
			return nil, opError("listing", u, err)
		}
		var files []Object
		for _, o := range objs {
			name := strings.TrimPrefix(o.URI.Key, dir)
			if name != "" && !Hidden(name) {
				files = append(files, o)
			}
		}
		if err := checkCommitted(objs, []Object{{URI: u.Join("x")}}); err != nil {
			return nil, err
		}
		switch {
		case len(files) > 0:
			return files, nil
		case len(objs) > 0 || n > 0 || u.Key == "" || strings.HasSuffix(u.Key, "/"):
			return nil, fmt.Errorf("directory %s has no files", u)
		}
		// Not a directory: one object, or nothing.
		out, err := s.head(ctx, c, u)
		if err != nil {
			if isNotFound(err) {
				return nil, fmt.Errorf("no object matches %s", u)
			}
			return nil, opError("reading the size of", u, err)
		}
		return []Object{{URI: u, Size: aws.ToInt64(out.ContentLength), Modified: aws.ToTime(out.LastModified),
			ETag: aws.ToString(out.ETag)}}, nil
	}
	// A glob: list everything under the literal part up to the last / before
	// the first metacharacter and keep what matches.
	prefix := u.Key[:strings.LastIndex(u.Key[:meta], "/")+1]
	objs, _, err := listPrefix(ctx, c, u.Bucket, prefix, false)
	if err != nil {
		return nil, opError("listing", URI{Bucket: u.Bucket, Key: prefix}, err)
	}
	// Hidden names are left out as in a directory, so a glob over a job's
	// output does not read its markers as data; a pattern whose last part
	// starts with . or _ asks for them.
	_, last := splitKey(u.Key)
	wantHidden := Hidden(last)
	var files []Object
	for _, o := range objs {
		_, name := splitKey(o.URI.Key)
		if ok, _ := path.Match(u.Key, o.URI.Key); ok && (wantHidden || !Hidden(name)) {
			files = append(files, o)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no object matches %s", u)
	}
	if err := checkCommitted(objs, files); err != nil {
		return nil, err
	}
	return files, nil
}

// The markers of a job's output written by SaveAsTextFile: PendingMarker
// from before its tasks start until after SuccessMarker, written last at
// its commit.
const (
	PendingMarker = "_PENDING"
	SuccessMarker = "_SUCCESS"
)

// checkCommitted fails when one of files lies in a directory holding
// PendingMarker but not SuccessMarker among listed: the output of a job
// that has not committed, or whose driver died while committing, whose
// parts would be read as if whole.
func checkCommitted(listed, files []Object) error {
	type state struct{ pending, success bool }
	dirs := map[string]*state{}
	for _, o := range listed {
		dir, name := splitKey(o.URI.Key)
		if name != PendingMarker && name != SuccessMarker {
			continue
		}
		st := dirs[dir]
		if st == nil {
			st = &state{}
			dirs[dir] = st
		}
		st.pending = st.pending || name == PendingMarker
		st.success = st.success || name == SuccessMarker
	}
	for _, f := range files {
		dir, _ := splitKey(f.URI.Key)
		if st := dirs[dir]; st != nil && st.pending && !st.success {
			d := URI{Bucket: f.URI.Bucket, Key: dir}
			return fmt.Errorf("%s is the output of a job that has not committed (it holds %s and no %s): "+
				"its job is running, failed or was killed; remove the prefix and its pending uploads "+
				"(docs/storage.md) and run the job again", d, PendingMarker, SuccessMarker)
		}
	}
	return nil
}

// Hidden reports whether a file's or object's name (a key's last part) is
// one an input listing leaves out, as Hadoop's does: it starts with . or _
// (a job's markers, editors' and tools' files).
func Hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// splitKey splits a key after its last /.
func splitKey(key string) (dir, name string) {
	i := strings.LastIndex(key, "/")
	return key[:i+1], key[i+1:]
}

// listPrefix lists the objects whose keys start with prefix (only those
// directly under it when shallow), in key order, and how many
// subdirectories (common prefixes) a shallow listing saw. Keys ending in /
// (the empty "folder" objects consoles create) are left out.
func listPrefix(ctx context.Context, c *s3.Client, bucket, prefix string, shallow bool) ([]Object, int, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)}
	if shallow {
		in.Delimiter = aws.String("/")
	}
	var objs []Object
	dirs := 0
	for pages := s3.NewListObjectsV2Paginator(c, in); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, 0, err
		}
		dirs += len(page.CommonPrefixes)
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if strings.HasSuffix(key, "/") {
				continue
			}
			objs = append(objs, Object{URI: URI{Bucket: bucket, Key: key}, Size: aws.ToInt64(o.Size),
				Modified: aws.ToTime(o.LastModified), ETag: aws.ToString(o.ETag)})
		}
	}
	return objs, dirs, nil
}

// ListTree lists every object under the prefix u/ (the whole bucket when
// u has no key), at any depth, in key order. None is no error.
func (s *Store) ListTree(ctx context.Context, u URI) ([]Object, error) {
	c, err := s.s3(ctx)
	if err != nil {
		return nil, err
	}
	prefix := u.Key
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	objs, _, err := listPrefix(ctx, c, u.Bucket, prefix, false)
	if err != nil {
		return nil, opError("listing", u, err)
	}
	return objs, nil
}

// Size is the size of one object.
func (s *Store) Size(ctx context.Context, u URI) (int64, error) {
	c, err := s.s3(ctx)
	if err != nil {
		return 0, err
	}
	n, err := s.size(ctx, c, u)
	return n, opError("reading the size of", u, err)
}

func (s *Store) size(ctx context.Context, c *s3.Client, u URI) (int64, error) {
	out, err := s.head(ctx, c, u)
	if err != nil {
		return 0, err
	}
	return aws.ToInt64(out.ContentLength), nil
}

func (s *Store) head(ctx context.Context, c *s3.Client, u URI) (*s3.HeadObjectOutput, error) {
	return c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(u.Key)})
}

// Exists reports whether u names an object or a prefix with objects under
// it (u/…), as a local path exists when it is a file or a directory.
func (s *Store) Exists(ctx context.Context, u URI) (bool, error) {
	c, err := s.s3(ctx)
	if err != nil {
		return false, err
	}
	dir := u.Key
	if dir != "" && !strings.HasSuffix(dir, "/") {
		dir += "/"
	}
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(u.Bucket), Prefix: aws.String(dir), MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, opError("listing", u, err)
	}
	if len(out.Contents) > 0 || u.Key == "" || strings.HasSuffix(u.Key, "/") {
		return len(out.Contents) > 0, nil
	}
	if _, err := s.size(ctx, c, u); err != nil {
		if isNotFound(err) {
			return false, nil
		}
		return false, opError("reading the size of", u, err)
	}
	return true, nil
}
