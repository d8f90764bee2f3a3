package client

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// InClusterHost is the API server of a pod's own cluster.
const InClusterHost = "https://kubernetes.default.svc"

// Options chooses where the client connects and how it authenticates.
type Options struct {
	// APIServer is the master URL's API server (k8s://<this>); empty uses
	// the kubeconfig's.
	APIServer string
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
}

// RESTConfig resolves the client configuration.
func RESTConfig(o Options) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if useInCluster(o.APIServer) {
		cfg, err = inClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the in-cluster Kubernetes configuration for %s: %w", o.APIServer, err)
		}
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
		if o.APIServer != "" {
			overrides.ClusterInfo.Server = o.APIServer
		}
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

// New returns a clientset for o.
func New(o Options) (kubernetes.Interface, *rest.Config, error) {
	cfg, err := RESTConfig(o)
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	return cs, cfg, nil
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
