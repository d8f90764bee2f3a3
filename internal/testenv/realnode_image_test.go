package testenv

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteDockerArchive reads back what WriteDockerArchive wrote: the
// manifest names the tags, the configuration by its digest and the layer,
// whose digest is the configuration's diff ID, and the layer holds the
// files with their modes. The same spec gives the same bytes.
func TestWriteDockerArchive(t *testing.T) {
	dir := t.TempDir()
	spec := ImageSpec{
		Tags: []string{"drover.invalid/a:1", "drover.invalid/b:1"},
		Files: []ImageFile{
			{Path: "tmp", Mode: 0o1777, Dir: true},
			{Path: "bin", Mode: 0o755, Data: []byte("#!binary")},
		},
		Entrypoint: []string{"/bin"},
		User:       "65532",
	}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	if err := WriteDockerArchive(a, spec); err != nil {
		t.Fatal(err)
	}
	if err := WriteDockerArchive(b, spec); err != nil {
		t.Fatal(err)
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Error("two archives of the same spec differ")
	}

	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(ab))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v %s", err, files["manifest.json"])
	}
	m := manifest[0]
	if strings.Join(m.RepoTags, ",") != "drover.invalid/a:1,drover.invalid/b:1" || len(m.Layers) != 1 {
		t.Fatalf("manifest: %+v", m)
	}
	cfgSum := sha256.Sum256(files[m.Config])
	if m.Config != hex.EncodeToString(cfgSum[:])+".json" {
		t.Errorf("config %s is not named by its digest", m.Config)
	}
	var cfg struct {
		OS     string `json:"os"`
		Config struct {
			Entrypoint []string
			User       string
		} `json:"config"`
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(files[m.Config], &cfg); err != nil {
		t.Fatal(err)
	}
	layer := files[m.Layers[0]]
	layerSum := sha256.Sum256(layer)
	if len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(layerSum[:]) {
		t.Errorf("diff IDs %v, layer digest %x", cfg.RootFS.DiffIDs, layerSum)
	}
	if cfg.OS != "linux" || cfg.Config.User != "65532" || strings.Join(cfg.Config.Entrypoint, " ") != "/bin" {
		t.Errorf("config: %+v", cfg)
	}

	lr := tar.NewReader(bytes.NewReader(layer))
	var got []string
	for {
		h, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Name+" "+os.FileMode(h.Mode).String())
	}
	if want := "tmp/ -rwxrwxrwx,bin -rwxr-xr-x"; strings.Join(got, ",") != want {
		t.Errorf("layer: %q, want %q", strings.Join(got, ","), want)
	}
}

// TestRunNetNSAddrRefusesTheMachinesNetwork: outside a namespace made for
// the run (any interface but loopback, drover0 and the CNI bridge), the
// real node does not start.
func TestRunNetNSAddrRefusesTheMachinesNetwork(t *testing.T) {
	if os.Getenv("DROVER_IN_RUN_NETNS") == "1" {
		t.Skip("inside the run's network namespace")
	}
	_, err := RunNetNSAddr()
	if err == nil {
		t.Skip("this machine's own namespace looks like a run's (no interface but loopback?)")
	}
	if !errors.Is(err, ErrNoRunNetNS) {
		t.Errorf("error %v does not wrap ErrNoRunNetNS", err)
	}
}
