package appimage_test

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/drover-project/drover/internal/appimage"
)

// entry is one path of a file system as an image records it.
type entry struct {
	Mode     string // fs.FileMode's String: type, set-id and sticky bits, permissions
	UID, GID int
	SHA256   string // of a regular file's content
}

// tree is a file system: entries by path relative to the root.
type tree map[string]entry

func sum(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// imageTree is img's file system, its layers flattened.
func imageTree(t *testing.T, img v1.Image) tree {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := tree{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading the image's layers: %v", err)
		}
		e := entry{Mode: h.FileInfo().Mode().String(), UID: h.Uid, GID: h.Gid}
		if h.Typeflag == tar.TypeReg {
			if e.SHA256, err = sum(tr); err != nil {
				t.Fatal(err)
			}
		}
		out[path.Clean(h.Name)] = e
	}
}

// fileEntry is the entry of the file at p on this machine.
func fileEntry(p string) (entry, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return entry{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	e := entry{Mode: fi.Mode().String(), UID: int(st.Uid), GID: int(st.Gid)}
	if fi.Mode().IsRegular() {
		f, err := os.Open(p)
		if err != nil {
			return entry{}, err
		}
		defer f.Close()
		if e.SHA256, err = sum(f); err != nil {
			return entry{}, err
		}
	}
	return e, nil
}

// readDir adds the file system under dir (dir itself left out) to into, at
// prefix.
func readDir(dir, prefix string, into tree) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		into[path.Join(prefix, filepath.ToSlash(rel))], err = fileEntry(p)
		return err
	})
}

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

const fakeCerts = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// TestAppTarball reads back what WriteTarball wrote of App's image with
// go-containerregistry's reader: the tag, the configuration, every file
// with its mode and owner; the same binary gives the same bytes.
func TestAppTarball(t *testing.T) {
	spec, err := appimage.App("wordcount", []byte("\x7fELF binary"), []byte(fakeCerts))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var archives [2][]byte
	for i, name := range []string{"a.tar", "b.tar"} {
		img, err := spec.Image()
		if err != nil {
			t.Fatal(err)
		}
		if err := appimage.WriteTarball(filepath.Join(dir, name), img, "drover.invalid/wordcount:dev"); err != nil {
			t.Fatal(err)
		}
		if archives[i], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if string(archives[0]) != string(archives[1]) {
		t.Error("two tarballs of the same image differ")
	}

	img, err := tarball.ImageFromPath(filepath.Join(dir, "a.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1.Config{User: "65532:65532", WorkingDir: "/home/nonroot", Env: []string{"PATH=/app"}}, cf.Config); diff != "" {
		t.Errorf("configuration (-want +got):\n%s", diff)
	}
	if cf.OS != "linux" || !cf.Created.Equal(appimage.Epoch) {
		t.Errorf("os %q created %v, want linux at the epoch", cf.OS, cf.Created)
	}
	want := tree{
		"app":                               {Mode: "drwxr-xr-x"},
		"app/wordcount":                     {Mode: "-rwxr-xr-x", SHA256: hashOf("\x7fELF binary")},
		"etc":                               {Mode: "drwxr-xr-x"},
		"etc/group":                         {Mode: "-rw-r--r--", SHA256: hashOf("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")},
		"etc/nsswitch.conf":                 {Mode: "-rw-r--r--", SHA256: hashOf("hosts: files dns\n")},
		"etc/passwd":                        {Mode: "-rw-r--r--", SHA256: hashOf("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		"etc/ssl":                           {Mode: "drwxr-xr-x"},
		"etc/ssl/certs":                     {Mode: "drwxr-xr-x"},
		"etc/ssl/certs/ca-certificates.crt": {Mode: "-rw-r--r--", SHA256: hashOf(fakeCerts)},
		"home":                              {Mode: "drwxr-xr-x"},
		"home/nonroot":                      {Mode: "drwx------", UID: 65532, GID: 65532},
		"tmp":                               {Mode: "dtrwxrwxrwx"},
	}
	if diff := cmp.Diff(want, imageTree(t, img)); diff != "" {
		t.Errorf("file system (-want +got):\n%s", diff)
	}
}

// TestWriteRootFS: the directory WriteRootFS writes is the image's file
// system, owners included (root only), and it refuses a directory in use.
func TestWriteRootFS(t *testing.T) {
	spec, err := appimage.App("pi", []byte("binary"), []byte(fakeCerts))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := spec.WriteRootFS(dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("WriteRootFS into a directory in use: %v, want an error saying it is not empty", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("giving /home/nonroot to 65532 needs root")
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := spec.WriteRootFS(root); err != nil {
		t.Fatal(err)
	}
	img, err := spec.Image()
	if err != nil {
		t.Fatal(err)
	}
	got := tree{}
	if err := readDir(root, "", got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(imageTree(t, img), got); diff != "" {
		t.Errorf("root file system (-image +directory):\n%s", diff)
	}
}

// TestBadInput: each mistake is one error naming it.
func TestBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "ca.crt")
	notPEM := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := func(p string) appimage.File { return appimage.File{Path: p, Mode: fs.ModeDir | 0o755} }
	image := func(files ...appimage.File) error {
		_, err := appimage.Spec{Layers: []appimage.Layer{files}}.Image()
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"missing CA bundle", func() error { _, err := appimage.ReadCACerts(missing); return err }(), "install Debian's ca-certificates package"},
		{"CA bundle without certificates", func() error { _, err := appimage.ReadCACerts(notPEM); return err }(), "no PEM certificate"},
		{"no CA bundle", func() error { _, err := appimage.App("pi", []byte("x"), nil); return err }(), "needs CA certificates"},
		{"name with a slash", func() error { _, err := appimage.App("a/b", []byte("x"), []byte(fakeCerts)); return err }(), `application name "a/b": expected a file name`},
		{"empty binary", func() error { _, err := appimage.App("pi", nil, []byte(fakeCerts)); return err }(), "binary pi is empty"},
		{"bad tag", appimage.CheckTag("Not A Tag"), `image tag "Not A Tag"`},
		{"no tag", appimage.WriteTarball(filepath.Join(t.TempDir(), "x.tar"), nil), "no tag"},
		{"no layers", func() error { _, err := appimage.Spec{}.Image(); return err }(), "at least one layer"},
		{"absolute path", image(dir("/etc")), `layer path "/etc": expected a clean relative path`},
		{"unclean path", image(dir("etc/../tmp")), `"etc/../tmp"`},
		{"path twice", image(dir("etc"), dir("etc")), "etc appears twice"},
		{"no parent", image(appimage.File{Path: "etc/passwd", Mode: 0o644}), "its directory etc is in no layer"},
		{"symlink", image(appimage.File{Path: "lib", Mode: fs.ModeSymlink | 0o777}), "expected a directory or a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", tc.err, tc.want)
			}
		})
	}
}
