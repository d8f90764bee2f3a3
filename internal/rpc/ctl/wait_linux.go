package ctl

import (
	"syscall"
	"unsafe"
)

const canWaitReadable = true

// waitReadable returns once raw has data to read, or its peer closed it,
// without reading: it peeks at one byte, and waits for the poller while
// there is none. A peek, not the poller's readiness alone, since readiness
// is edge-triggered and may have been consumed by the last read.
func waitReadable(raw syscall.RawConn) error {
	return raw.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		// Data, the end of the stream or an error: the read that follows
		// returns it.
		return errno != syscall.EAGAIN
	})
}
