package client

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/drover-project/drover/internal/metrics"
)

// InClusterHost is the API server of a pod's own cluster.
const InClusterHost = "https://kubernetes.default.svc"

// Options chooses where the client connects and how it authenticates.
type Options struct {
	// APIServers are the master URL's API servers (k8s://<these>, or
	// spark.kubernetes.apiserver.host) in order of preference; empty uses
	// the kubeconfig's. With more than one, requests fail over between
	// them (see Failover).
	APIServers []string
	// Context is spark.kubernetes.context.
	Context string
	// Credentials override the kubeconfig's or the service account's.
	Credentials Credentials
	// QPS and Burst are the client's rate limit; zero keeps client-go's.
	QPS   float32
	Burst int
	// UserAgent names the component in the API server's logs and metrics.
	UserAgent string
	// WrapTransport, when set, wraps the client's transport (request
	// accounting in benchmarks).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Logger gets a line when requests leave an API server and when they
	// return to it; nil is slog.Default().
	Logger *slog.Logger
}

// apiServer is the first of the API servers, "" for none.
func (o Options) apiServer() string {
	if len(o.APIServers) == 0 {
		return ""
	}
	return o.APIServers[0]
}

// RESTConfig resolves the client configuration.
func RESTConfig(o Options) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if useInCluster(o.apiServer()) {
		cfg, err = inClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the in-cluster Kubernetes configuration for %s: %w", o.apiServer(), err)
		}
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
		overrides.ClusterInfo.Server = o.apiServer()
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the Kubernetes client configuration (KUBECONFIG or ~/.kube/config%s): %w",
				contextNote(o.Context), err)
		}
	}
	if err := applyAuth(cfg, o.Credentials); err != nil {
		return nil, err
	}
	if o.QPS != 0 {
		cfg.QPS = o.QPS
	}
	if o.Burst != 0 {
		cfg.Burst = o.Burst
	}
	server := cfg.Host
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return schemeCheck{next: rt, server: server} })
	if o.WrapTransport != nil {
		cfg.Wrap(o.WrapTransport)
	}
	cfg.UserAgent = o.UserAgent
	if cfg.UserAgent == "" {
		cfg.UserAgent = "drover"
	}
	return cfg, nil
}

// Client is a clientset with its REST configuration.
type Client struct {
	kubernetes.Interface
	// Config is the configuration of the first API server, for requests
	// the clientset does not make (port forwarding); ForHost gives it for
	// the API server in use.
	Config   *rest.Config
	failover *Failover
}

// Host is the API server requests go to now.
func (c *Client) Host() string {
	if c.failover == nil {
		return c.Config.Host
	}
	return c.failover.Current()
}

// ForHost is Config for the API server in use.
func (c *Client) ForHost() *rest.Config {
	cfg := rest.CopyConfig(c.Config)
	cfg.Host = c.Host()
	return cfg
}

// Close stops probing failed API servers; a client of one API server has
// nothing to stop.
func (c *Client) Close() error {
	if c.failover == nil {
		return nil
	}
	return c.failover.Close()
}

// failoverDialTimeout bounds the TCP connect to one API server of a list,
// so a silent one (packets dropped) costs at most this before the next is
// tried, within the second the failover promises.
const failoverDialTimeout = 900 * time.Millisecond

// New returns a client for o: with several API servers, one whose every
// request goes to the first healthy one (see Failover). The caller closes
// it.
func New(o Options) (*Client, error) {
	cfg, err := RESTConfig(o)
	if err != nil {
		return nil, err
	}
	// A pod's driver reaches the first through the in-cluster address
	// (cfg.Host, from the pod's environment); the list follows.
	endpoints := []string{cfg.Host}
	for _, e := range o.APIServers[min(1, len(o.APIServers)):] {
		if !slices.Contains(endpoints, e) {
			endpoints = append(endpoints, e)
		}
	}
	c := &Client{Config: cfg}
	if len(endpoints) == 1 {
		if c.Interface, err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
		}
		return c, nil
	}
	fcfg := rest.CopyConfig(cfg)
	fcfg.Dial = (&net.Dialer{Timeout: failoverDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	// The failover sits outside client-go's whole chain (credentials,
	// user agent, the wrappers above): it only points each attempt at
	// an API server, and the chain below serves them all.
	rt, err := rest.TransportFor(fcfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client's transport: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	metrics.KubeAPIServer(endpoints, endpoints[0])
	c.failover, err = NewFailover(FailoverOptions{Endpoints: endpoints, Transport: rt, OnSwitch: announce(log, endpoints)})
	if err != nil {
		return nil, err
	}
	c.Interface, err = kubernetes.NewForConfigAndClient(cfg, &http.Client{Transport: c.failover, Timeout: cfg.Timeout})
	if err != nil {
		_ = c.failover.Close()
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	return c, nil
}

// announce is the failover's hook: a line when requests leave an API
// server and one when they return, and the metrics.
func announce(log *slog.Logger, endpoints []string) func(from, to string, err error) {
	return func(from, to string, err error) {
		metrics.KubeAPIServer(endpoints, to)
		if err != nil {
			metrics.KubeAPIFailover()
			log.Warn("leaving Kubernetes API server", "endpoint", from, "next", to, "error", err)
			return
		}
		log.Info("Kubernetes API server back in use", "endpoint", to, "leaving", from)
	}
}

// useInCluster reports whether the service account applies: the master is
// the in-cluster address and the process runs in a pod.
func useInCluster(apiServer string) bool {
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		return false
	}
	return apiServer == InClusterHost || strings.HasPrefix(apiServer, InClusterHost+":")
}

func contextNote(ctx string) string {
	if ctx == "" {
		return ""
	}
	return ", context " + ctx
}

// Credentials are the spark.kubernetes.authenticate.* settings of one
// side (submission, driver); empty fields keep the kubeconfig's or the
// service account's.
type Credentials struct {
	OAuthToken string
	// OAuthTokenFile is read when the client is built; OAuthTokenFileKey
	// is its setting's name, for the error.
	OAuthTokenFile, OAuthTokenFileKey         string
	ClientCertFile, ClientKeyFile, CACertFile string
}

func applyAuth(cfg *rest.Config, c Credentials) error {
	if tok := c.OAuthToken; tok != "" {
		cfg.BearerToken, cfg.BearerTokenFile = tok, ""
	}
	if f := c.OAuthTokenFile; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading %s: %w", c.OAuthTokenFileKey, err)
		}
		cfg.BearerToken, cfg.BearerTokenFile = strings.TrimSpace(string(b)), ""
	}
	if f := c.ClientCertFile; f != "" {
		cfg.CertFile, cfg.CertData = f, nil
	}
	if f := c.ClientKeyFile; f != "" {
		cfg.KeyFile, cfg.KeyData = f, nil
	}
	if f := c.CACertFile; f != "" {
		cfg.CAFile, cfg.CAData = f, nil
	}
	return nil
}
