package testenv

import (
	"os"
	"syscall"
)

// sysProcAttr puts a component in its own process group (so stopping it
// reaches everything it started) and has the kernel kill it when this
// process dies, even by SIGKILL or a test timeout.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// chrootProcAttr is sysProcAttr with root as the process's root directory:
// directly as root, else in a user namespace that maps the test's user to
// root (unprivileged user namespaces must be allowed).
func chrootProcAttr(root string) (*syscall.SysProcAttr, error) {
	a := sysProcAttr()
	a.Chroot = root
	if uid := os.Geteuid(); uid != 0 {
		a.Cloneflags = syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a, nil
}
