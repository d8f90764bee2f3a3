//go:build !linux

package testenv

import (
	"errors"
	"syscall"
)

// sysProcAttr puts a component in its own process group; only Linux can also
// tie its life to this process's.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// chrootProcAttr is Linux only.
func chrootProcAttr(string) (*syscall.SysProcAttr, error) {
	return nil, errors.New("running a component in its own root directory needs Linux")
}
