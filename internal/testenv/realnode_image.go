package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
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

// ImageFile is one regular file or directory (Dir) of an image layer.
type ImageFile struct {
	Path string // relative, without a leading slash
	Mode int64
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

// WriteDockerArchive writes spec as a docker-archive tarball (manifest.json,
// the image configuration, one uncompressed layer), the format `docker
// save` writes and `ctr images import` reads, without Docker: every
// timestamp is zero, so the same spec gives the same bytes.
func WriteDockerArchive(path string, spec ImageSpec) error {
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	for _, f := range spec.Files {
		h := &tar.Header{Name: f.Path, Mode: f.Mode, Typeflag: tar.TypeReg, Size: int64(len(f.Data)), Format: tar.FormatPAX}
		if f.Dir {
			h = &tar.Header{Name: strings.TrimSuffix(f.Path, "/") + "/", Mode: f.Mode, Typeflag: tar.TypeDir, Format: tar.FormatPAX}
		}
		if err := lw.WriteHeader(h); err != nil {
			return fmt.Errorf("image layer: %w", err)
		}
		if !f.Dir {
			if _, err := lw.Write(f.Data); err != nil {
				return fmt.Errorf("image layer: %w", err)
			}
		}
	}
	if err := lw.Close(); err != nil {
		return fmt.Errorf("image layer: %w", err)
	}
	layerSum := sha256.Sum256(layer.Bytes())
	layerHex := hex.EncodeToString(layerSum[:])

	cfg := map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      time.Unix(0, 0).UTC().Format(time.RFC3339),
		"config": map[string]any{
			"Entrypoint": spec.Entrypoint,
			"User":       spec.User,
			"Env":        spec.Env,
			"WorkingDir": "/",
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerHex}},
		"history": []map[string]any{{"created_by": "drover testenv.WriteDockerArchive"}},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cfgSum := sha256.Sum256(cfgJSON)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   cfgName,
		"RepoTags": spec.Tags,
		"Layers":   []string{layerHex + "/layer.tar"},
	}})
	if err != nil {
		return err
	}

	var out bytes.Buffer
	w := tar.NewWriter(&out)
	for _, e := range []struct {
		name string
		data []byte
	}{{cfgName, cfgJSON}, {layerHex + "/layer.tar", layer.Bytes()}, {"manifest.json", manifest}} {
		if err := w.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := w.Write(e.data); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// BuildProbeImage builds hack/realnode/probe as a static binary (go build,
// CGO_ENABLED=0, from the module this test runs in) and writes it as a
// docker-archive tarball at path, tagged ProbeImage and SandboxImage: a
// root file system of /probe, /tmp (1777) and /etc/passwd and /etc/group
// with root and nonroot (65532), entry point /probe.
func BuildProbeImage(ctx context.Context, path string) error {
	bin := filepath.Join(filepath.Dir(path), "probe")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin,
		"github.com/drover-project/drover/hack/realnode/probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the probe binary: %w\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	return WriteDockerArchive(path, ImageSpec{
		Tags: []string{ProbeImage, SandboxImage},
		Files: []ImageFile{
			{Path: "etc", Mode: 0o755, Dir: true},
			{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
			{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
			{Path: "tmp", Mode: 0o1777, Dir: true},
			{Path: "probe", Mode: 0o755, Data: data},
		},
		Entrypoint: []string{"/probe"},
		Env:        []string{"PATH=/"},
	})
}
