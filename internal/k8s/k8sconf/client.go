package k8sconf

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s/client"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/master"
)

// Where the driver listens, and the API client's credentials.

// ClientOptions are the API client's settings from conf: spark.kubernetes.
// context, the rate limit, and the credentials under keys, their files
// found where getenv says the driver's volume is (nil for submit, whose
// files are where the user named them).
func ClientOptions(conf *config.Conf, keys config.AuthKeys, getenv func(string) string) client.Options {
	if getenv != nil {
		conf = localCredentialPaths(conf, getenv)
	}
	o := client.Options{
		Context: config.KubernetesContext.Get(conf),
		QPS:     float32(config.KubernetesClientQPS.Get(conf)),
		Burst:   config.KubernetesClientBurst.Get(conf),
	}
	if keys.OAuthToken != nil {
		o.Credentials = client.Credentials{
			OAuthToken:        keys.OAuthToken.Get(conf),
			OAuthTokenFile:    keys.OAuthTokenFile.Get(conf),
			OAuthTokenFileKey: keys.OAuthTokenFile.Key(),
			ClientCertFile:    keys.ClientCertFile.Get(conf),
			ClientKeyFile:     keys.ClientKeyFile.Get(conf),
			CACertFile:        keys.CACertFile.Get(conf),
		}
	}
	return o
}

// authKeys are the credentials of this driver: the cluster-mode driver's
// own keys when it runs in its pod, else the client-mode keys.
func authKeys(c *config.Conf, getenv func(string) string) config.AuthKeys {
	if config.KubernetesDriverPodName.Get(c) != "" && getenv("KUBERNETES_SERVICE_HOST") != "" {
		return config.KubernetesDriverAuth
	}
	return config.KubernetesAuth
}

// localCredentialPaths is conf with the credential files drover submit
// shipped in the driver's Secret found where the pod's volume is: their
// mount path, or where a process node (tests) put the volume.
func localCredentialPaths(conf *config.Conf, getenv func(string) string) *config.Conf {
	out := conf
	for _, e := range DriverCredentialFiles {
		f := e.Get(conf)
		if local := podspec.LocalConfFile(f, getenv); f != "" && local != f {
			if out == conf {
				out = conf.Clone()
			}
			out.Set(e.Key(), local)
		}
	}
	return out
}

// DriverAddress is where the driver's servers listen and are reached: the
// host executors dial and the address to listen on, spark.driver.host
// (else this pod's IP, else this machine's address) and
// spark.driver.bindAddress (else that host, or every interface when the
// host is not loopback).
func DriverAddress(c *config.Conf, getenv func(string) string) (host, bind string) {
	return driverAddress(c, getenv)
}

func driverAddress(c *config.Conf, getenv func(string) string) (host, bind string) {
	host = config.DriverHost.Get(c)
	if host == "" {
		host = getenv(envvar.DriverPodIP)
	}
	if host == "" {
		host = outboundIP()
	}
	bind = config.DriverBindAddress.Get(c)
	if bind == "" {
		bind = host
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			bind = "0.0.0.0"
		}
	}
	return host, bind
}

// outboundIP is this machine's address for other hosts: the first IPv4
// address of an interface that is up and not loopback (else loopback).
// It reads the interfaces rather than asking the routing table with a
// UDP "connection" to some outside address, which a sandbox may forbid.
func outboundIP() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "127.0.0.1"
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// APIServers are the API servers the clients of conf use, in order of
// preference: spark.kubernetes.apiserver.host, else the master URL's
// (k8s://a,b); nil leaves the choice to the kubeconfig or the pod's
// service account. When both are set they must name the same list: a
// client that silently preferred one would reach a cluster the user did
// not mean.
func APIServers(conf *config.Conf, m master.URL) ([]string, error) {
	fromMaster := m.Endpoints()
	key := config.KubernetesAPIServerHost
	s := key.Get(conf)
	if strings.TrimSpace(s) == "" {
		return fromMaster, nil
	}
	listed, err := master.ParseAPIServers(s)
	if err != nil {
		return nil, config.Invalid(fmt.Errorf("%s=%s: %w; expected https://host:port or a comma-separated list of them", key.Key(), s, err))
	}
	if fromMaster != nil && !slices.Equal(canonical(fromMaster), canonical(listed)) {
		return nil, config.Invalid(fmt.Errorf("%s=%s contradicts the master URL %s (API servers %s): name the API servers in one place, or the same list in both",
			key.Key(), s, m.Raw, strings.Join(fromMaster, ",")))
	}
	return listed, nil
}

// canonical spells API server URLs one way for comparison: host in lower
// case, no trailing slash.
func canonical(urls []string) []string {
	out := make([]string, len(urls))
	for i, s := range urls {
		if u, err := url.Parse(s); err == nil {
			u.Host, u.Path = strings.ToLower(u.Host), strings.TrimRight(u.Path, "/")
			s = u.String()
		}
		out[i] = s
	}
	return out
}
