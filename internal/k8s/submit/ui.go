package submit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/drover-project/drover/internal/k8s/podspec"
)

// UIOptions says where drover ui listens on this machine.
type UIOptions struct {
	// Address is the local address (default 127.0.0.1) and Port the local
	// port, 0 for a free one.
	Address string
	Port    int
	// Ready is called with the local URL once it serves.
	Ready func(url string)
}

// ForwardUI forwards a local port to the web UI of the driver pod that id
// names, through the API server (the pods/portforward subresource, over
// SPDY), until ctx ends.
func ForwardUI(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, id ID, o UIOptions, errOut io.Writer) error {
	pod, port, err := driverUI(ctx, cs, id)
	if err != nil {
		return err
	}
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return fmt.Errorf("port-forward to %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	url := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	if o.Address == "" {
		o.Address = "127.0.0.1"
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{o.Address}, []string{fmt.Sprintf("%d:%d", o.Port, port)}, stop, ready, io.Discard, errOut)
	if err != nil {
		return fmt.Errorf("port-forward to %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case err := <-done:
		return explain(fmt.Errorf("port-forward to the web UI of %s/%s (port %d): %w", pod.Namespace, pod.Name, port, err), pod.Namespace, "pods/portforward")
	case <-ctx.Done():
		close(stop)
		<-done
		return nil
	case <-ready:
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stop)
		<-done
		return fmt.Errorf("port-forward to %s/%s: no local port: %w", pod.Namespace, pod.Name, err)
	}
	if o.Ready != nil {
		o.Ready("http://" + o.Address + ":" + strconv.Itoa(int(ports[0].Local)))
	}
	select {
	case <-ctx.Done():
		close(stop)
		<-done
		return nil
	case err := <-done:
		if err == nil {
			err = errors.New("the connection to the API server ended")
		}
		return fmt.Errorf("port-forward to %s/%s: %w", pod.Namespace, pod.Name, err)
	}
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
