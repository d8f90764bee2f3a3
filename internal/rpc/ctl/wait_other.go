//go:build !linux

package ctl

import (
	"errors"
	"syscall"
)

// canWaitReadable is false: recvShallow is for Linux, elsewhere the reader
// waits reading.
const canWaitReadable = false

func waitReadable(syscall.RawConn) error { return errors.ErrUnsupported }
