package k8s

import (
	"fmt"
	"net"
	"os"
	"path"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

// Where the driver listens, what executors run, and with which credentials.

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
	for _, e := range podspec.DriverCredentialFiles {
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

// driverAddress picks the host executors dial and the address to listen
// on: spark.driver.host (else this pod's IP, else this machine's address)
// and spark.driver.bindAddress (else that host, or every interface when
// the host is not loopback).
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

// outboundIP is the address this machine uses to reach other hosts; it
// sends no packet.
func outboundIP() string {
	conn, err := net.Dial("udp", "10.255.255.255:9")
	if err != nil {
		return "127.0.0.1"
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP.String()
}

// executorBinary is the executor container's command: the application
// binary's path in the image.
func executorBinary(conf *config.Conf) (string, error) {
	if bin := config.KubernetesExecutorBinary.Get(conf); bin != "" {
		if !path.IsAbs(bin) {
			return "", fmt.Errorf("%s=%s: expected the absolute path of the application binary in the executor image",
				config.KubernetesExecutorBinary.Key(), bin)
		}
		return bin, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the application binary for executor pods (set %s): %w", config.KubernetesExecutorBinary.Key(), err)
	}
	return exe, nil
}

// DriverAddress is where the driver's other servers, such as the web UI,
// listen and are reached: the same host and bind address as its RPC server.
func DriverAddress(c *config.Conf) (host, bind string) { return driverAddress(c, os.Getenv) }
