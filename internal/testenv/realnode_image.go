package testenv

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/drover-project/drover/internal/appimage"
)

// The real node's tiny image: one static binary, hack/realnode/probe, under
// two names. ProbeImage serves as the sandbox ("pause") image that
// containerd pins, and as a workload: `probe echo WORDS`, `probe exit N`;
// without arguments it waits for SIGTERM. Both names are on the reserved
// .invalid domain, so nothing ever tries to pull them: pods use
// imagePullPolicy Never.
const (
	ProbeImage   = "drover.invalid/probe:1"
	SandboxImage = "drover.invalid/pause:1"
)

// BuildAppImage builds the application image of the Go main package pkg
// (relative to the repository root, such as "./examples/wordcount") as
// `make image` does: the binary built as the Dockerfile builds it, at
// /app/<last element of pkg>, on internal/appimage's base, written to path
// as a docker-archive tarball tagged tag, for StartRealNode to import.
func BuildAppImage(ctx context.Context, path, pkg, tag string) error {
	name := baseName(pkg)
	if err := appimage.CheckName(name); err != nil {
		return err
	}
	if err := appimage.CheckTag(tag); err != nil {
		return err
	}
	certs, err := appimage.ReadCACerts(appimage.DefaultCACerts)
	if err != nil {
		return err
	}
	root, err := appimage.ModuleRoot(ctx)
	if err != nil {
		return err
	}
	data, err := buildBinary(ctx, root, pkg, filepath.Dir(path))
	if err != nil {
		return err
	}
	spec, err := appimage.App(name, data, certs)
	if err != nil {
		return err
	}
	return writeImage(path, spec, tag)
}

// BuildProbeImage builds hack/realnode/probe as GoBuild does (static, from
// the module this test runs in) and writes it as a docker-archive tarball
// at path, tagged ProbeImage and SandboxImage: appimage's base without CA
// certificates (root and nonroot 65532 in /etc/passwd, /tmp 1777) and
// /probe, the entry point.
func BuildProbeImage(ctx context.Context, path string) error {
	data, err := buildBinary(ctx, "", "github.com/drover-project/drover/hack/realnode/probe", filepath.Dir(path))
	if err != nil {
		return err
	}
	return writeImage(path, appimage.Spec{
		Layers: []appimage.Layer{appimage.Base(nil), {{Path: "probe", Mode: 0o755, Data: data}}},
		Config: v1.Config{Entrypoint: []string{"/probe"}, Env: []string{"PATH=/"}, WorkingDir: "/"},
	}, ProbeImage, SandboxImage)
}

// buildBinary is the bytes of pkg built by appimage.GoBuild in dir,
// without reaching the network, in a temporary directory under near.
func buildBinary(ctx context.Context, dir, pkg, near string) ([]byte, error) {
	tmp, err := os.MkdirTemp(near, ".build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, baseName(pkg))
	if err := appimage.GoBuild(ctx, dir, pkg, bin, "GOFLAGS=-mod=readonly", "GOPROXY=off"); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("built binary: %w", err)
	}
	return data, nil
}

// baseName is the last element of a package path, the name go build gives
// its binary.
func baseName(pkg string) string { return path.Base(filepath.ToSlash(pkg)) }

func writeImage(path string, spec appimage.Spec, tags ...string) error {
	img, err := spec.Image()
	if err != nil {
		return err
	}
	return appimage.WriteTarball(path, img, tags...)
}

// ImageFile is one regular file or directory (Dir) of an image layer.
type ImageFile struct {
	Path string // relative, without a leading slash
	Mode int64  // Unix permissions, with the sticky bit 0o1000
	Dir  bool
	Data []byte
}

// ImageSpec is a single-layer image: its files, entry point, user and the
// names it is tagged with.
type ImageSpec struct {
	Tags       []string
	Files      []ImageFile
	Entrypoint []string
	User       string
	Env        []string
}

// WriteDockerArchive writes spec as a docker-archive tarball through
// internal/appimage. BuildAppImage supersedes it; it stays while
// internal/k8s/submit's temporary realnode_tmpimage_test.go calls it.
func WriteDockerArchive(path string, spec ImageSpec) error {
	layer := make(appimage.Layer, len(spec.Files))
	for i, f := range spec.Files {
		mode := fs.FileMode(f.Mode).Perm()
		if f.Mode&0o1000 != 0 {
			mode |= fs.ModeSticky
		}
		if f.Dir {
			mode |= fs.ModeDir
		}
		layer[i] = appimage.File{Path: strings.TrimSuffix(f.Path, "/"), Mode: mode, Data: f.Data}
	}
	return writeImage(path, appimage.Spec{
		Layers: []appimage.Layer{layer},
		Config: v1.Config{Entrypoint: spec.Entrypoint, User: spec.User, Env: spec.Env, WorkingDir: "/"},
	}, spec.Tags...)
}
