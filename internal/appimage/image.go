package appimage

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Spec is an image: its layers, bottom first, and its configuration.
type Spec struct {
	Layers []Layer
	Config v1.Config
}

// App is the application image of the binary called name: the base layer
// with caCerts (ReadCACerts), the binary at /app/<name>, run as nonroot.
func App(name string, binary, caCerts []byte) (Spec, error) {
	if len(caCerts) == 0 {
		return Spec{}, fmt.Errorf("the application image needs CA certificates; expected a PEM bundle such as %s", DefaultCACerts)
	}
	app, err := AppLayer(name, binary)
	if err != nil {
		return Spec{}, err
	}
	return Spec{
		Layers: []Layer{Base(caCerts), app},
		// No entry point: drover's pods name the binary as their command.
		Config: v1.Config{User: User, WorkingDir: Home, Env: []string{"PATH=/app"}},
	}, nil
}

// checked is s's layers sorted and checked (Layer.sorted).
func (s Spec) checked() ([][]File, error) {
	if len(s.Layers) == 0 {
		return nil, fmt.Errorf("an image needs at least one layer")
	}
	dirs := map[string]bool{}
	out := make([][]File, len(s.Layers))
	for i, l := range s.Layers {
		files, err := l.sorted(dirs)
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i+1, err)
		}
		out[i] = files
	}
	return out, nil
}

// Image is s as an image for linux on this machine's architecture (the
// architecture GoBuild builds for), every timestamp Epoch.
func (s Spec) Image() (v1.Image, error) {
	layers, err := s.checked()
	if err != nil {
		return nil, err
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Created:      v1.Time{Time: Epoch},
		Config:       s.Config,
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("image configuration: %w", err)
	}
	adds := make([]mutate.Addendum, len(layers))
	for i, files := range layers {
		data, err := layerTar(files)
		if err != nil {
			return nil, err
		}
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
			tarball.WithCompressedCaching)
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i+1, err)
		}
		adds[i] = mutate.Addendum{Layer: l, History: v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: "drover appimage"}}
	}
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("image layers: %w", err)
	}
	return img, nil
}

// CheckTag says whether tag can name an image in a tarball.
func CheckTag(tag string) error {
	_, err := parseTag(tag)
	return err
}

func parseTag(t string) (name.Tag, error) {
	tag, err := name.NewTag(t)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image tag %q: %w; expected a reference such as registry.example/wordcount:1.0", t, err)
	}
	return tag, nil
}

// WriteTarball writes img as a docker-archive tarball (manifest.json, the
// configuration, gzipped layers) named by tags, the format `docker save`
// writes and `docker load` and containerd's `ctr images import` read. The
// file appears whole or not at all. With several tags, manifest.json lists
// them in any order (go-containerregistry's): the image is the same.
func WriteTarball(file string, img v1.Image, tags ...string) error {
	if len(tags) == 0 {
		return fmt.Errorf("image tarball %s: no tag; expected at least one, such as drover.invalid/wordcount:dev", file)
	}
	refs := map[name.Reference]v1.Image{}
	for _, t := range tags {
		tag, err := parseTag(t)
		if err != nil {
			return err
		}
		refs[tag] = img
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return fmt.Errorf("image tarball: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tarball.MultiRefWrite(refs, tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("image tarball %s: %w", file, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("image tarball: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("image tarball: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("image tarball: %w", err)
	}
	return nil
}
