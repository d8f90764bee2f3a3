package ctl

import (
	"fmt"
	"net"
	"syscall"
)

// ListenConfig is how a driver listens for control connections: each
// accepted connection has KeepAlive. On Linux an accepted socket inherits
// the listening socket's keep-alive options, so they are set once on the
// listener instead of with four system calls per executor.
func ListenConfig() net.ListenConfig {
	return net.ListenConfig{
		KeepAlive: -1, // what the listener's sockets inherit
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				for _, o := range []struct{ level, name, value int }{
					{syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, int(KeepAlive.Idle.Seconds())},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, int(KeepAlive.Interval.Seconds())},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, KeepAlive.Count},
				} {
					if err := syscall.SetsockoptInt(int(fd), o.level, o.name, o.value); err != nil {
						serr = fmt.Errorf("setting the listener's TCP keep-alive (option %d): %w", o.name, err)
						return
					}
				}
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
}
