package procnode

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
)

// portForwardProtocol is the kubelet's port-forward protocol over SPDY
// (the API server turns a client's WebSocket into it).
const portForwardProtocol = "portforward.k8s.io"

// servePortForward answers the kubelet's /portForward/{namespace}/{pod}:
// each pair of streams the client opens (an error and a data stream with
// the same request id) is connected to the port they name on the pod's IP,
// as a kubelet connects them inside the pod's network namespace.
func (a *Agent) servePortForward(rw http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("pod")
	w := a.worker(ns, name)
	if w == nil {
		http.Error(rw, fmt.Sprintf("pod %s/%s not found on this node", ns, name), http.StatusNotFound)
		return
	}
	podIP := w.latest().Status.PodIP
	if podIP == "" {
		http.Error(rw, fmt.Sprintf("pod %s/%s has no IP yet", ns, name), http.StatusServiceUnavailable)
		return
	}
	if _, err := httpstream.Handshake(r, rw, []string{portForwardProtocol}); err != nil {
		return // Handshake answered
	}
	streams := make(chan httpstream.Stream, 4)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(rw, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		if _, err := strconv.ParseUint(s.Headers().Get(corev1.PortHeader), 10, 16); err != nil {
			return fmt.Errorf("port forward stream: bad %s header %q", corev1.PortHeader, s.Headers().Get(corev1.PortHeader))
		}
		streams <- s
		return nil
	})
	if conn == nil {
		return // the upgrader answered
	}
	defer conn.Close()
	conn.SetIdleTimeout(10 * time.Minute)
	type pair struct{ data, errs httpstream.Stream }
	pairs := map[string]*pair{}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var s httpstream.Stream
		select {
		case <-conn.CloseChan():
			return
		case s = <-streams:
		}
		id := s.Headers().Get(corev1.PortForwardRequestIDHeader)
		p := pairs[id]
		if p == nil {
			p = &pair{}
			pairs[id] = p
		}
		switch s.Headers().Get(corev1.StreamType) {
		case corev1.StreamTypeData:
			p.data = s
		case corev1.StreamTypeError:
			p.errs = s
		default:
			s.Reset()
			continue
		}
		if p.data == nil || p.errs == nil {
			continue
		}
		delete(pairs, id)
		wg.Go(func() {
			defer conn.RemoveStreams(p.data, p.errs)
			defer p.errs.Close()
			defer p.data.Close()
			port := p.data.Headers().Get(corev1.PortHeader)
			if err := forward(p.data, net.JoinHostPort(podIP, port)); err != nil {
				fmt.Fprintf(p.errs, "error forwarding port %s to pod %s/%s: %v", port, ns, name, err)
			}
		})
	}
}

// forward copies between stream and a connection to addr until both ends
// are done; each side's end is passed on as a half-close.
func forward(stream io.ReadWriteCloser, addr string) error {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(stream, c)
		stream.Close() // a stream's Close ends its writing half
		close(done)
	}()
	io.Copy(c, stream)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	<-done
	return nil
}
