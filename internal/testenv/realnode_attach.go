package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// realNodeCNIBin is where Debian's containernetworking-plugins put the
// CNI plugins, which StartRealNode's containerd runs.
const realNodeCNIBin = "/usr/lib/cni"

// CheckRealNodeBuilt checks, before anything starts, that the real node's
// kubelet and containerd (with its runc shim and ctr) are built, as
// StartRealNode needs: hack/build-realnode.sh builds them.
func CheckRealNodeBuilt() error {
	if _, err := FindBinaries(Kubelet); err != nil {
		return fmt.Errorf("%w (the real node's: build it with hack/build-realnode.sh)", err)
	}
	cdir, err := ContainerdDir()
	if err != nil {
		return err
	}
	if err := requireBinaries(cdir, "containerd", "containerd-shim-runc-v2", "ctr"); err != nil {
		return fmt.Errorf("%w (containerd: build it with hack/build-realnode.sh)", err)
	}
	return nil
}

// CheckRealNodePackages checks for what StartRealNode takes from the
// system rather than builds: runc, the CNI plugins and ip (iproute2, for
// SetUpRunNetNS).
func CheckRealNodePackages() error {
	var missing []string
	for _, bin := range []string{"runc", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin+" (not on PATH)")
		}
	}
	if _, err := os.Stat(filepath.Join(realNodeCNIBin, "bridge")); err != nil {
		missing = append(missing, "the CNI bridge plugin (no "+filepath.Join(realNodeCNIBin, "bridge")+")")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: a real node needs %s; on Debian: apt-get install runc containernetworking-plugins iproute2 (hack/install-test-packages.sh installs the first two)",
			ErrMissingBinaries, strings.Join(missing, ", "))
	}
	return nil
}

// AttachRealNode is a handle on the real node whose containerd listens at
// socket, with ctr from containerdDir (ContainerdDir of the process that
// started it), for Import and Ctr from another process: drover dev-cluster
// image import. Stop must not be called on it.
func AttachRealNode(socket, containerdDir string) *RealNode {
	return &RealNode{Socket: socket, containerd: containerdDir}
}
