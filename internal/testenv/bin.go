package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drover-project/drover/internal/envvar"
)

// KubernetesVersion is the version of the control-plane binaries testenv
// runs; hack/build-testbin.sh builds it.
const KubernetesVersion = "v1.36.3"

// The binaries in the bin directory.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeScheduler         = "kube-scheduler"
	KubeControllerManager = "kube-controller-manager"
	Kubectl               = "kubectl"
	Kwok                  = "kwok"
	kwokStagesDir         = "kwok-stages"
)

// BinDir returns the directory holding the control-plane binaries:
// $DROVER_TESTBIN, else ~/.cache/drover/k8s/<version> (the cache root can be
// moved with $DROVER_CACHE, as for hack/build-testbin.sh). It fails when etcd
// or kube-apiserver is missing, saying how to build them.
func BinDir() (string, error) {
	return FindBinaries(Etcd, KubeAPIServer)
}

// FindBinaries is BinDir checking for the named binaries (Etcd, Kubectl,
// ...) instead.
func FindBinaries(names ...string) (string, error) {
	dir, err := binDirPath()
	if err != nil {
		return "", err
	}
	return dir, requireBinaries(dir, names...)
}

func binDirPath() (string, error) {
	if d := os.Getenv(envvar.TestBin); d != "" {
		return filepath.Abs(d)
	}
	cache := os.Getenv(envvar.Cache)
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the Kubernetes test binaries: set DROVER_TESTBIN: %w", err)
		}
		cache = filepath.Join(home, ".cache", "drover")
	}
	return filepath.Join(cache, "k8s", KubernetesVersion), nil
}

// ErrMissingBinaries is wrapped by the errors of BinDir and Start when the
// control-plane binaries are not built.
var ErrMissingBinaries = errors.New("kubernetes test binaries missing")

// requireBinaries checks that every name exists in dir.
func requireBinaries(dir string, names ...string) error {
	var missing []string
	for _, n := range names {
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil || (n != kwokStagesDir && st.Mode()&0o111 == 0) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s not in %s; build them with `make testbin` in the drover repository (minutes, once; cached in ~/.cache/drover) or point DROVER_TESTBIN at a directory holding them",
		ErrMissingBinaries, strings.Join(missing, ", "), dir)
}
