package testenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/drover-project/drover/internal/envvar"
)

// RealNodeRequired reports whether $DROVER_REALNODE says real-node tests
// must run (make realnode sets it, inside the run's network namespace):
// then a missing prerequisite fails them, as CI=true does elsewhere.
func RealNodeRequired() bool {
	v, _ := strconv.ParseBool(os.Getenv(envvar.RealNode))
	return v
}

// NewRealNode starts a real node (StartRealNode) named name on e with the
// probe image (BuildProbeImage) imported, and stops it when t ends, before
// e stops. Outside the run's network namespace, or without the binaries,
// the test is skipped, unless RealNodeRequired, where it fails.
func NewRealNode(t testing.TB, e *Env, name string) *RealNode {
	t.Helper()
	unavailable := func(err error) {
		t.Helper()
		if RealNodeRequired() {
			t.Fatalf("real node unavailable (DROVER_REALNODE=1: failing instead of skipping): %v", err)
		}
		t.Skipf("real node unavailable, skipping (run make realnode): %v", err)
	}
	if _, err := RunNetNSAddr(); err != nil {
		unavailable(err)
	}
	img := filepath.Join(t.TempDir(), "probe.tar")
	if err := BuildProbeImage(context.Background(), img); err != nil {
		t.Fatal(err)
	}
	n, err := e.StartRealNode(context.Background(), name, img)
	if err != nil {
		if errors.Is(err, ErrMissingBinaries) || errors.Is(err, ErrNoRunNetNS) {
			unavailable(err)
		}
		t.Fatalf("starting real node %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stopping real node %s: %v", name, err)
		}
	})
	return n
}
