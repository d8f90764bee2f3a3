//go:build !linux

package ctl

import "net"

// ListenConfig is how a driver listens for control connections: each
// accepted connection has KeepAlive, set when it is accepted.
func ListenConfig() net.ListenConfig { return net.ListenConfig{KeepAliveConfig: KeepAlive} }
