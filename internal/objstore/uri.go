package objstore

import (
	"fmt"
	"strings"
)

// URI names an object, or a prefix of objects, in a bucket.
type URI struct {
	Bucket string
	Key    string // without a leading slash; "" is the bucket's root
}

// String is the canonical form, s3://bucket/key: an s3a:// path comes out
// as s3://, so one object has one name in splits and messages.
func (u URI) String() string { return "s3://" + u.Bucket + "/" + u.Key }

// Join is the URI of name under u taken as a directory.
func (u URI) Join(name string) URI {
	if u.Key == "" || strings.HasSuffix(u.Key, "/") {
		return URI{Bucket: u.Bucket, Key: u.Key + name}
	}
	return URI{Bucket: u.Bucket, Key: u.Key + "/" + name}
}

// HasScheme reports whether path starts with a URI scheme (letters, digits,
// +, - or . after a letter, then "://"): such a path is not a local file
// name, and Parse says whether drover can read it.
func HasScheme(path string) bool {
	i := strings.Index(path, "://")
	if i <= 0 {
		return false
	}
	for j, r := range path[:i] {
		letter := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (j == 0 || !((r >= '0' && r <= '9') || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return true
}

// Parse parses s3://bucket/key or s3a://bucket/key.
func Parse(s string) (URI, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return URI{}, fmt.Errorf("path %q: expected s3://bucket/key", s)
	}
	switch strings.ToLower(scheme) {
	case "s3", "s3a":
	default:
		return URI{}, fmt.Errorf("path %q: unsupported scheme %s:// (drover reads and writes s3:// and s3a:// object storage and local paths)", s, scheme)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if err := checkBucket(bucket); err != nil {
		return URI{}, fmt.Errorf("path %q: %w", s, err)
	}
	return URI{Bucket: bucket, Key: key}, nil
}

// checkBucket applies S3's bucket naming rules that matter for a path: a
// bucket name is 3 to 63 lowercase letters, digits, dots and hyphens, so a
// typo such as s3:///key or s3://My_Bucket/key fails here, not as a
// signature error from the store.
func checkBucket(b string) error {
	if b == "" {
		return fmt.Errorf("no bucket name")
	}
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q must be 3 to 63 characters long", b)
	}
	for _, r := range b {
		if !((r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' || r == '-') {
			return fmt.Errorf("bucket name %q may hold only lowercase letters, digits, dots and hyphens", b)
		}
	}
	return nil
}
