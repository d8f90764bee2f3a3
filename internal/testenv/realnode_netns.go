package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
)

// RunNetNSNodeAddr is the address hack/realnode-netns.sh and SetUpRunNetNS
// put on RealNodeIface: the real node's InternalIP (RunNetNSAddr).
const RunNetNSNodeAddr = "10.87.0.1"

// RunNetNSCommands are the ip(8) commands that make a new network
// namespace the run's (RunNetNSAddr): lo up, and RealNodeIface, a bridge
// without ports, holding the node's address and the kubernetes Service's.
// hack/realnode-netns.sh runs the same, as TestRunNetNSCommandsMatchScript
// checks, so the tests' namespace and drover dev-cluster's are alike.
func RunNetNSCommands() [][]string {
	return [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", RealNodeIface, "type", "bridge"},
		{"addr", "add", RunNetNSNodeAddr + "/32", "dev", RealNodeIface},
		{"addr", "add", ServiceAddr + "/32", "dev", RealNodeIface},
		{"link", "set", RealNodeIface, "up"},
	}
}

// SetUpRunNetNS makes the network namespace this process is in the run's,
// as hack/realnode-netns.sh does, and returns the node's address. The
// namespace must be new (loopback only, as after unshare(CLONE_NEWNET)):
// it refuses to add interfaces to any other, the host's above all.
func SetUpRunNetNS(ctx context.Context) (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("listing network interfaces: %w", err)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagLoopback == 0 {
			return "", fmt.Errorf("%w: refusing to set up a real node's network where interface %s is (want a new network namespace, loopback only)", ErrNoRunNetNS, ifc.Name)
		}
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return "", errors.New("ip (iproute2) not found: a real node's network namespace is set up with it")
	}
	for _, args := range RunNetNSCommands() {
		if out, err := exec.CommandContext(ctx, ip, args...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return RunNetNSAddr()
}
