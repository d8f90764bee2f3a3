package testenv

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// imageFiles is the image's tagged config and its files ("path mode") from
// the tarball at file, read with go-containerregistry as ctr reads it.
func imageFiles(t *testing.T, file, tag string) (v1.Config, []string) {
	t.Helper()
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(file, &ref)
	if err != nil {
		t.Fatalf("image %s in %s: %v", tag, file, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	var files []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return cf.Config, files
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, strings.TrimSuffix(h.Name, "/")+" "+h.FileInfo().Mode().String())
	}
}

// TestImages reads back, as ctr would, the images the real-node tests
// import: each tag names the image, with its configuration and files.
func TestImages(t *testing.T) {
	dir := t.TempDir()
	base := []string{"etc drwxr-xr-x", "etc/group -rw-r--r--", "etc/nsswitch.conf -rw-r--r--", "etc/passwd -rw-r--r--",
		"home drwxr-xr-x", "home/nonroot drwx------", "tmp dtrwxrwxrwx"}
	certs := []string{"etc/ssl drwxr-xr-x", "etc/ssl/certs drwxr-xr-x", "etc/ssl/certs/ca-certificates.crt -rw-r--r--"}
	for _, tc := range []struct {
		name   string
		build  func(path string) error
		tags   []string
		config v1.Config
		files  []string
	}{{
		name:   "probe",
		build:  func(p string) error { return BuildProbeImage(t.Context(), p) },
		tags:   []string{ProbeImage, SandboxImage},
		config: v1.Config{Entrypoint: []string{"/probe"}, Env: []string{"PATH=/"}, WorkingDir: "/"},
		files:  append([]string{"probe -rwxr-xr-x"}, base...),
	}, {
		name:   "application",
		build:  func(p string) error { return BuildAppImage(t.Context(), p, "./examples/pi", "drover.invalid/pi:test") },
		tags:   []string{"drover.invalid/pi:test"},
		config: v1.Config{User: "65532:65532", WorkingDir: "/home/nonroot", Env: []string{"PATH=/app"}},
		files:  append(append([]string{"app drwxr-xr-x", "app/pi -rwxr-xr-x"}, base...), certs...),
	}, {
		name: "WriteDockerArchive",
		build: func(p string) error {
			return WriteDockerArchive(p, ImageSpec{
				Tags:       []string{"drover.invalid/a:1"},
				Files:      []ImageFile{{Path: "tmp", Mode: 0o1777, Dir: true}, {Path: "bin", Mode: 0o755, Data: []byte("#!binary")}},
				Entrypoint: []string{"/bin"},
				User:       "65532",
			})
		},
		tags:   []string{"drover.invalid/a:1"},
		config: v1.Config{Entrypoint: []string{"/bin"}, User: "65532", WorkingDir: "/"},
		files:  []string{"bin -rwxr-xr-x", "tmp dtrwxrwxrwx"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name+".tar")
			if err := tc.build(file); err != nil {
				t.Fatal(err)
			}
			for _, tag := range tc.tags {
				config, files := imageFiles(t, file, tag)
				if diff := cmp.Diff(tc.config, config); diff != "" {
					t.Errorf("%s: configuration (-want +got):\n%s", tag, diff)
				}
				if diff := cmp.Diff(tc.files, files, cmpSorted); diff != "" {
					t.Errorf("%s: files (-want +got):\n%s", tag, diff)
				}
			}
		})
	}
}

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

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
