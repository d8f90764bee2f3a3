package ctl

import (
	"net"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAcceptedKeepAlive: a connection accepted by ListenConfig's listener
// has KeepAlive, inherited from the listening socket.
func TestAcceptedKeepAlive(t *testing.T) {
	lc := ListenConfig()
	lis, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	client, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	nc, err := lis.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		for name, o := range map[string]struct{ level, name int }{
			"SO_KEEPALIVE":  {syscall.SOL_SOCKET, syscall.SO_KEEPALIVE},
			"TCP_KEEPIDLE":  {syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE},
			"TCP_KEEPINTVL": {syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL},
			"TCP_KEEPCNT":   {syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT},
			"TCP_NODELAY":   {syscall.IPPROTO_TCP, syscall.TCP_NODELAY},
		} {
			v, err := syscall.GetsockoptInt(int(fd), o.level, o.name)
			if err != nil {
				gerr = err
				return
			}
			got[name] = v
		}
	}); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	want := map[string]int{
		"SO_KEEPALIVE":  1,
		"TCP_KEEPIDLE":  int(KeepAlive.Idle.Seconds()),
		"TCP_KEEPINTVL": int(KeepAlive.Interval.Seconds()),
		"TCP_KEEPCNT":   KeepAlive.Count,
		"TCP_NODELAY":   1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("accepted socket's options (-want +got):\n%s", diff)
	}
}
