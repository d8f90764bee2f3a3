package testenv

import "syscall"

// sysProcAttr puts a component in its own process group (so stopping it
// reaches everything it started) and has the kernel kill it when this
// process dies, even by SIGKILL or a test timeout.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
