//go:build !linux

package procnode

import "syscall"

// sysProcAttr puts a container's process in its own group; only Linux can
// also tie its life to the agent's.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
