package driver

import (
	"os"
	"os/user"
	"runtime/debug"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/master"
)

// address is where the driver's other servers, such as the web UI, listen
// and are reached: its RPC server's (k8sconf.DriverAddress). On Kubernetes
// that is the pod's IP; a local master has no pod, and a pod-IP variable
// in its environment is not its own.
func address(conf *config.Conf, m master.URL) (host, bind string) {
	getenv := os.Getenv
	if m.Kind != master.Kubernetes {
		getenv = func(string) string { return "" }
	}
	return k8sconf.DriverAddress(conf, getenv)
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
