//go:build !linux

package testenv

import "syscall"

// sysProcAttr puts a component in its own process group; only Linux can also
// tie its life to this process's.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
