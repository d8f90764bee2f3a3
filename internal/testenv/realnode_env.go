package testenv

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"
)

// RealNodeName is the node Options.RealNode starts.
const RealNodeName = "realnode"

// ServiceAddr is the ClusterIP of the "kubernetes" Service (the first
// address of apiServerArgs' --service-cluster-ip-range), which the kubelet
// gives pods as KUBERNETES_SERVICE_HOST, and the port it gives them.
// hack/realnode-netns.sh puts the address on RealNodeIface.
const (
	ServiceAddr = "10.0.0.1"
	ServicePort = "443"
)

// fronts returns the environment's forwarders to the API servers.
func (e *Env) fronts() []*front {
	var fs []*front
	for _, f := range []*front{e.front, e.service} {
		if f != nil {
			fs = append(fs, f)
		}
	}
	return fs
}

// setServing tells every front whether the API server called name takes
// new connections.
func (e *Env) setServing(name string, ok bool) {
	for _, f := range e.fronts() {
		f.setServing(name, ok)
	}
}

// startRealNode starts Options.RealNode's node, after the kubernetes
// Service's forwarder: with no kube-proxy, that is how a driver in one of
// its pods reaches the API, at KUBERNETES_SERVICE_HOST:PORT, and the
// serving certificate names that address. Every API server ready now
// takes connections; the others once ready (launchAPIServer).
func (e *Env) startRealNode(ctx context.Context, began time.Time) error {
	if _, err := RunNetNSAddr(); err != nil {
		return err
	}
	var err error
	listen := net.JoinHostPort(ServiceAddr, ServicePort)
	if e.service, err = startFront(listen, e.URLs, filepath.Join(e.Dir, "service.log")); err != nil {
		return err
	}
	for i := range e.URLs {
		if c := e.component(APIServerName(i)); c != nil && c.ready(ctx) == nil {
			e.service.setServing(APIServerName(i), true)
		}
	}
	probe := filepath.Join(e.Dir, "probe.tar")
	if err := BuildProbeImage(ctx, probe); err != nil {
		return fmt.Errorf("building the real node's probe image: %w", err)
	}
	if e.RealNode, err = e.StartRealNode(ctx, RealNodeName, append([]string{probe}, e.opts.RealNodeImages...)...); err != nil {
		return err
	}
	e.opts.Logf("testenv: real node %s ready after %s", RealNodeName, time.Since(began).Round(time.Millisecond))
	return nil
}

// Import imports docker-archive or OCI tarballs into the node's
// containerd, where its pods find them (imagePullPolicy Never or
// IfNotPresent).
func (n *RealNode) Import(ctx context.Context, tarballs ...string) error {
	for _, img := range tarballs {
		if out, err := n.Ctr(ctx, "images", "import", "--local", img); err != nil {
			return fmt.Errorf("importing %s: %w\n%s", img, err, out)
		}
	}
	return nil
}

// Expose makes the loopback TCP address addr (host:port) reachable from
// the node's pods, at the node's address: a forwarder on IP, stopped with
// the node. It returns that address.
func (n *RealNode) Expose(addr string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f, err := startForward(net.JoinHostPort(n.IP, "0"), addr, filepath.Join(n.Dir, fmt.Sprintf("expose-%d.log", len(n.forwards))))
	if err != nil {
		return "", err
	}
	n.forwards = append(n.forwards, f)
	return f.ln.Addr().String(), nil
}
