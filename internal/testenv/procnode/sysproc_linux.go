package procnode

import "syscall"

// sysProcAttr puts a container's process in its own group and kills it if
// the agent's process dies, so no pod outlives a crashed test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
