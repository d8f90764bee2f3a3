package driver

import (
	"net"
	"os"
	"os/user"
	"runtime/debug"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s"
	"github.com/drover-project/drover/internal/master"
)

// address is where the driver's other servers, such as the web UI, listen
// and are reached. On Kubernetes it is its RPC server's (k8s.DriverAddress:
// the pod's IP); under local masters spark.driver.host, else this
// machine's address, and spark.driver.bindAddress, else that host, or
// every interface when the host is not loopback.
func address(conf *config.Conf, m master.URL) (host, bind string) {
	if m.Kind == master.Kubernetes {
		return k8s.DriverAddress(conf)
	}
	host = config.DriverHost.Get(conf)
	if host == "" {
		host = outboundIP()
	}
	bind = config.DriverBindAddress.Get(conf)
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

// currentUser is who runs the driver, as Spark's sparkUser: the login
// name, else $USER.
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// driverHost is the driver's host name: its pod's name on Kubernetes
// (which a process node, running pods as processes, does not make the
// host name).
func driverHost() string {
	if pod := os.Getenv(envvar.DriverPodName); pod != "" {
		return pod
	}
	h, _ := os.Hostname()
	return h
}

// droverVersion is the module version the binary was built from.
func droverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
