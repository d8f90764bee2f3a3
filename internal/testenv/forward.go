package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
)

// Forward is a TCP forwarder for code outside the package: drover
// dev-cluster up --real-node's daemon, inside the network namespace of its
// real node, forwards what listeners made in the host's namespace accept
// to the servers inside. Stop it with Close.
type Forward struct{ f *front }

// StartForward listens on listen (host:port, port 0 for a free one) and
// forwards each connection to the TCP address backend, logging each to
// logPath.
func StartForward(listen, backend, logPath string) (*Forward, error) {
	f, err := startForward(listen, backend, logPath)
	if err != nil {
		return nil, err
	}
	return &Forward{f}, nil
}

// ForwardFrom forwards each connection ln accepts to the TCP address
// backend, logging each to logPath; Close closes ln. ln may come from
// another network namespace (an inherited file descriptor): a socket stays
// in the namespace it was made in.
func ForwardFrom(ln net.Listener, backend, logPath string) (*Forward, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the forwarder's log: %w", err)
	}
	f := &front{ln: ln, log: log, conns: map[net.Conn]struct{}{}, backends: []string{backend}, names: []string{backend}, serving: []bool{true}}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.wg.Go(f.serve)
	return &Forward{f}, nil
}

// Addr is the address the forwarder listens on.
func (f *Forward) Addr() string { return f.f.ln.Addr().String() }

// Close stops accepting, ends every forwarded connection and waits for
// them.
func (f *Forward) Close() { f.f.close() }
