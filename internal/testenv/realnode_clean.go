package testenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// realNodePrefix names real nodes' directories in os.TempDir(); each holds
// ownerFile, the PID of the test process that started the node. Not
// stalePrefix: removeStale would RemoveAll through the mounts inside.
const realNodePrefix = "drover-realnode-"

// cgroupRoot is where the v1 controllers are mounted; the kubelet (with
// its default cgroupRoot "/" and cgroupfs) makes kubepods under each.
const cgroupRoot = "/sys/fs/cgroup"

// cleanStaleRealNodes removes what the real nodes of test processes that
// died (a SIGKILL, a test timeout) left: containerd and the kubelet die
// with them (Pdeathsig), but the shims and their containers run on,
// detached. Their shims are killed, their mounts detached, their
// directories removed; when no real node is alive, every process left in
// the kubepods cgroups is killed and the empty cgroups removed.
func cleanStaleRealNodes() {
	parent := os.TempDir()
	entries, _ := os.ReadDir(parent)
	live := false
	for _, ent := range entries {
		if !ent.IsDir() || !strings.HasPrefix(ent.Name(), realNodePrefix) {
			continue
		}
		dir := filepath.Join(parent, ent.Name())
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || perr != nil || pid <= 0 || processAlive(pid) {
			live = true // alive, or being created right now
			continue
		}
		killShims(filepath.Join(dir, "containerd.sock"))
		unmountUnder(dir)
		removeLinksInto("/var/log/containers", dir)
		_ = os.RemoveAll(dir)
	}
	if !live {
		killKubepods()
		removeKubepodsCgroups()
	}
}

// otherRealNodeAlive reports whether a real node directory other than
// self has a live owner.
func otherRealNodeAlive(self string) bool {
	entries, _ := os.ReadDir(os.TempDir())
	for _, ent := range entries {
		dir := filepath.Join(os.TempDir(), ent.Name())
		if !ent.IsDir() || !strings.HasPrefix(ent.Name(), realNodePrefix) || dir == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || perr != nil || processAlive(pid) {
			return true
		}
	}
	return false
}

// killKubepods SIGKILLs every process in the kubepods cgroups (the pids
// controller's tree lists them all) and waits up to 5 s for them to go.
func killKubepods() {
	root := filepath.Join(cgroupRoot, "pids", "kubepods")
	for range 50 {
		found := false
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(path)
			for f := range strings.FieldsSeq(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					found = true
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
		if !found {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeKubepodsCgroups removes the kubepods cgroups the kubelet made under
// each controller, deepest first; rmdir fails on a cgroup that still has
// processes, which are then left alone.
func removeKubepodsCgroups() {
	ctrls, _ := os.ReadDir(cgroupRoot)
	for _, c := range ctrls {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(cgroupRoot, c.Name(), "kubepods"), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for _, d := range slices.Backward(dirs) {
			_ = syscall.Rmdir(d)
		}
	}
}

// realNodeLock is the file whose lock a real node holds while it lives.
var realNodeLock = filepath.Join(os.TempDir(), "drover-realnode.lock")

// lockRealNode waits, as long as ctx allows, for the machine-wide real
// node lock and returns it held. One real node runs at a time on a
// machine: the kubelet's device-plugin socket
// (/var/lib/kubelet/device-plugins) and the kubepods cgroups are the
// machine's, whatever its --root-dir, so a second kubelet would take them
// from the first. The lock ends with its process, so a killed test never
// leaves it held.
func lockRealNode(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(realNodeLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the real-node lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", realNodeLock, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("another real node runs on this machine (lock %s), and one runs at a time: the kubelet's device-plugin socket and the kubepods cgroups are machine-wide: %w", realNodeLock, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
