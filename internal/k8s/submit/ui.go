package submit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	neturl "net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/client"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/ui"
)

// UIOptions says where drover ui listens on this machine.
type UIOptions struct {
	// Address is the local address (default 127.0.0.1) and Port the local
	// port, 0 for a free one.
	Address string
	Port    int
	// Ready is called once the local end serves, with its URL and, when
	// the driver's UI asks for the application's token, a login link that
	// admits one browser (else "").
	Ready func(url, login string)
}

// ForwardUI forwards a local port to the web UI of the driver pod that id
// names, through the API server (the pods/portforward subresource, over
// SPDY), until ctx ends. When the UI asks for the application's token
// (podspec.AnnotationUIToken), ForwardUI reads it from the driver's
// Secret, which takes the right to get that Secret, and serves the local
// end itself: a proxy that adds the token, and admits only a browser that
// opened its one-time login link (or a client with the application's
// token): other users of this machine and web pages that rebind a name to
// 127.0.0.1 get nothing.
func ForwardUI(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, id ID, o UIOptions, errOut io.Writer) error {
	pod, port, err := driverUI(ctx, cs, id)
	if err != nil {
		return err
	}
	token, err := uiToken(ctx, cs, pod)
	if err != nil {
		return err
	}
	if o.Address == "" {
		o.Address = "127.0.0.1"
	}
	fwAddress, fwPort := o.Address, o.Port
	if token != "" {
		// The forward's end is the proxy's: on loopback, and of no use
		// without the token.
		fwAddress, fwPort = "127.0.0.1", 0
	}
	if c, ok := cs.(*client.Client); ok {
		// The API server the lookups above reached: with several, the
		// first may be the one that failed.
		cfg = c.ForHost()
	}
	fw, err := forwardPort(ctx, cfg, cs, pod, fwAddress, fwPort, port, errOut)
	if err != nil || fw == nil {
		return err
	}
	defer fw.stop()
	url, login := "http://"+net.JoinHostPort(fwAddress, strconv.Itoa(fw.local)), ""
	if token != "" {
		ln, err := net.Listen("tcp", net.JoinHostPort(o.Address, strconv.Itoa(o.Port)))
		if err != nil {
			return fmt.Errorf("drover ui: listening on %s: %w", net.JoinHostPort(o.Address, strconv.Itoa(o.Port)), err)
		}
		auth := ui.NewAuth(ui.NewToken(), token)
		srv := ui.Serve(ln, auth.Wrap(tokenProxy(url, token, errOut)), nil)
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			srv.Stop(stopCtx)
		}()
		url = "http://" + ln.Addr().String()
		login = auth.LoginLink(url)
	}
	if o.Ready != nil {
		o.Ready(url, login)
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-fw.done:
		if err == nil {
			err = errors.New("the connection to the API server ended")
		}
		return fmt.Errorf("port-forward to %s/%s: %w", pod.Namespace, pod.Name, err)
	}
}

// tokenProxy forwards requests to target with the application's token,
// and without this machine's cookies, which are the local end's.
func tokenProxy(target, token string, errOut io.Writer) http.Handler {
	u, _ := neturl.Parse(target) // made above
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Header.Set("Authorization", "Bearer "+token)
			r.Out.Header.Del("Cookie")
		},
		ErrorLog: log.New(errOut, "drover ui: ", 0),
	}
}

// forwarding is a running port-forward: its local port, its end (done),
// and stop.
type forwarding struct {
	local int
	done  <-chan error
	stop  func()
}

// forwardPort forwards address:localPort to port of pod until stopped;
// nil, nil when ctx ended first.
func forwardPort(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, pod *corev1.Pod, address string, localPort, port int, errOut io.Writer) (*forwarding, error) {
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("port-forward to %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	url := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	if host, err := neturl.Parse(cfg.Host); err == nil && host.Host != "" {
		url.Scheme, url.Host = host.Scheme, host.Host
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stopCh, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{address}, []string{fmt.Sprintf("%d:%d", localPort, port)}, stopCh, ready, io.Discard, errOut)
	if err != nil {
		return nil, fmt.Errorf("port-forward to %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	stop := sync.OnceFunc(func() {
		close(stopCh)
		<-done
	})
	select {
	case err := <-done:
		return nil, explain(fmt.Errorf("port-forward to the web UI of %s/%s (port %d): %w", pod.Namespace, pod.Name, port, err), pod.Namespace, "pods/portforward")
	case <-ctx.Done():
		stop()
		return nil, nil
	case <-ready:
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return nil, fmt.Errorf("port-forward to %s/%s: no local port: %w", pod.Namespace, pod.Name, err)
	}
	return &forwarding{local: int(ports[0].Local), done: done, stop: stop}, nil
}

// uiToken is the application's UI token when the driver pod's UI asks for
// one (podspec.AnnotationUIToken names its Secret), else "".
func uiToken(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) (string, error) {
	name := pod.Annotations[podspec.AnnotationUIToken]
	if name == "" {
		return "", nil
	}
	sec, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		return "", fmt.Errorf("the web UI of %s/%s asks for the application's token, kept in secret %s, which you may not read: "+
			"drover ui needs get on it (kubectl auth can-i get secret/%s -n %s tells, a namespace admin can grant it): %w",
			pod.Namespace, pod.Name, name, name, pod.Namespace, err)
	}
	if err != nil {
		return "", explain(fmt.Errorf("reading the web UI's token from secret %s/%s: %w", pod.Namespace, name, err), pod.Namespace, "")
	}
	// The token's characters need no escaping in a properties file.
	prefix := config.UIToken.Key() + "="
	for line := range strings.SplitSeq(string(sec.Data[podspec.DriverSecretKey]), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("secret %s/%s holds no %s, which the web UI of %s asks for", pod.Namespace, name, config.UIToken.Key(), pod.Name)
}

// driverUI finds the running driver pod id names and its spark-ui port.
func driverUI(ctx context.Context, cs kubernetes.Interface, id ID) (*corev1.Pod, int, error) {
	apps, err := Find(ctx, cs, id)
	if err != nil {
		return nil, 0, err
	}
	if len(apps) != 1 {
		names := make([]string, len(apps))
		for i, a := range apps {
			names[i] = a.Name()
		}
		return nil, 0, fmt.Errorf("%s matches %d applications (%v); ui opens one: name it exactly", id, len(apps), names)
	}
	a := apps[0]
	if a.Driver == nil {
		return nil, 0, fmt.Errorf("%s has no driver pod: a client-mode driver serves its web UI where it runs (its log says \"Spark UI available at\")", a.Name())
	}
	pod := a.Driver
	if pod.Status.Phase != corev1.PodRunning {
		return nil, 0, fmt.Errorf("driver pod %s/%s is %s: its web UI is served only while it runs", pod.Namespace, pod.Name, pod.Status.Phase)
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == podspec.UIPortName {
				return pod, int(p.ContainerPort), nil
			}
		}
	}
	return nil, 0, fmt.Errorf("driver pod %s/%s has no %s port: it was submitted with spark.ui.enabled=false, or by an older drover", pod.Namespace, pod.Name, podspec.UIPortName)
}
