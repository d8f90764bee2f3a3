package appimage

import (
	"archive/tar"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// File is one entry of a layer: a regular file, or a directory when Mode
// has fs.ModeDir.
type File struct {
	// Path is slash-separated and relative to the root: "etc/passwd".
	Path string
	// Mode is the permissions, with fs.ModeDir, fs.ModeSticky, fs.ModeSetuid
	// and fs.ModeSetgid where they apply.
	Mode     fs.FileMode
	UID, GID int
	Data     []byte
}

// Layer is the files of one layer, in any order; every file's parent
// directory is in it or in a layer below.
type Layer []File

// Epoch is every timestamp of the image: fixed, so that the same files
// give the same digest.
var Epoch = time.Unix(0, 0).UTC()

// The nonroot user of the base, which the pods' runAsNonRoot accepts only
// by number.
const (
	NonrootUID = 65532
	NonrootGID = 65532
	User       = "65532:65532"
	Home       = "/home/nonroot"
)

// DefaultCACerts is where Debian's ca-certificates package puts the bundle
// of certificate authorities (and where the base layer puts it too).
const DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"

// ReadCACerts reads the certificate bundle for the base layer, with an
// error that says what to install when it is missing.
func ReadCACerts(file string) ([]byte, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("CA certificates %s: %w (install Debian's ca-certificates package, or name another PEM bundle)", file, err)
	}
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	if !bytes.Contains(data, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("CA certificates %s: no PEM certificate in it; expected a bundle like Debian's %s", file, DefaultCACerts)
	}
	return data, nil
}

// Base is the layer under every image: the users root, nobody and nonroot,
// /tmp, nonroot's home and, when caCerts is not empty, the CA bundle at
// DefaultCACerts.
func Base(caCerts []byte) Layer {
	l := Layer{
		dir("etc", 0o755),
		file("etc/passwd", 0o644, "root:x:0:0:root:/root:/sbin/nologin\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"+
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"),
		file("etc/group", 0o644, "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"),
		// Go's resolver assumes "files dns" without it; other resolvers may not.
		file("etc/nsswitch.conf", 0o644, "hosts: files dns\n"),
		dir("home", 0o755),
		{Path: strings.TrimPrefix(Home, "/"), Mode: fs.ModeDir | 0o700, UID: NonrootUID, GID: NonrootGID},
		dir("tmp", fs.ModeSticky|0o777),
	}
	if len(caCerts) > 0 {
		l = append(l, dir("etc/ssl", 0o755), dir("etc/ssl/certs", 0o755),
			File{Path: strings.TrimPrefix(DefaultCACerts, "/"), Mode: 0o644, Data: caCerts})
	}
	return l
}

// CheckName says whether name can be the application binary's name: a
// file name, so that the binary is /app/<name>.
func CheckName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("application name %q: expected a file name, such as wordcount (the binary becomes /app/<name>)", name)
	}
	return nil
}

// AppLayer is the application layer: the binary at /app/<name>.
func AppLayer(name string, binary []byte) (Layer, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if len(binary) == 0 {
		return nil, fmt.Errorf("application binary %s is empty", name)
	}
	return Layer{dir("app", 0o755), {Path: "app/" + name, Mode: 0o755, Data: binary}}, nil
}

func dir(p string, mode fs.FileMode) File { return File{Path: p, Mode: fs.ModeDir | mode} }

func file(p string, mode fs.FileMode, data string) File {
	return File{Path: p, Mode: mode, Data: []byte(data)}
}

// sorted is l's files by path, checked: clean relative paths, no path
// twice, parents present (in l or in dirs, the directories of the layers
// under it), only directories and regular files. It adds l's directories
// to dirs.
func (l Layer) sorted(dirs map[string]bool) ([]File, error) {
	files := slices.SortedFunc(slices.Values(l), func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	for i, f := range files {
		if f.Path == "" || f.Path != path.Clean(f.Path) || path.IsAbs(f.Path) || f.Path == ".." || strings.HasPrefix(f.Path, "../") {
			return nil, fmt.Errorf("layer path %q: expected a clean relative path such as etc/passwd", f.Path)
		}
		if i > 0 && files[i-1].Path == f.Path {
			return nil, fmt.Errorf("layer path %s appears twice", f.Path)
		}
		if f.Mode.Type() != 0 && f.Mode.Type() != fs.ModeDir {
			return nil, fmt.Errorf("layer path %s has mode %s: expected a directory or a regular file", f.Path, f.Mode)
		}
		if f.Mode.IsDir() && len(f.Data) > 0 {
			return nil, fmt.Errorf("layer path %s is a directory with data", f.Path)
		}
		if parent := path.Dir(f.Path); parent != "." && !dirs[parent] {
			return nil, fmt.Errorf("layer path %s: its directory %s is in no layer", f.Path, parent)
		}
		// Sorted, a directory comes before what it holds.
		if f.Mode.IsDir() {
			dirs[f.Path] = true
		}
	}
	return files, nil
}

// tarMode is mode as a tar header's: permissions and the set-id and sticky
// bits in their Unix places.
func tarMode(mode fs.FileMode) int64 {
	m := int64(mode.Perm())
	for bit, unix := range map[fs.FileMode]int64{fs.ModeSetuid: 0o4000, fs.ModeSetgid: 0o2000, fs.ModeSticky: 0o1000} {
		if mode&bit != 0 {
			m |= unix
		}
	}
	return m
}

// layerTar is the layer as an uncompressed tar, entries in path order (a
// directory before what it holds), every timestamp Epoch.
func layerTar(files []File) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Path, Mode: tarMode(f.Mode), Uid: f.UID, Gid: f.GID, ModTime: Epoch, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}
		if f.Mode.IsDir() {
			h.Name, h.Typeflag, h.Size = f.Path+"/", tar.TypeDir, 0
		}
		if err := w.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Path, err)
		}
		if _, err := w.Write(f.Data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Path, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return buf.Bytes(), nil
}
